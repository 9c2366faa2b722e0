"""tenure against the established Python queues, on the same engine, in the same run.

    .venv/bin/python -m bench [--smoke] [--engines sqlite,postgres,redis] [--rounds N]
    .venv/bin/python -m bench --engines redis,redis-cluster,postgres,pgbouncer --systems tenure \\
        --no-extras --name topologies        (tenure on the production topologies)
    .venv/bin/python -m bench doctor-corpus [--show]   (the doctor on real projects)
    .venv/bin/python -m bench doctor-standard [--show] [--only RULE] [--apps] [--set S]
    .venv/bin/python -m bench walk [--engine E|all]    (one job's path through the modules)
    .venv/bin/python -m bench retention [--jobs N]     (size and throughput while pruning)
    .venv/bin/python -m bench flow [--jobs N]          (concurrency= drain against plain)
    .venv/bin/python -m bench rawloops [--jobs N]      (raw engine loop, store loop, worker)
    .venv/bin/python -m bench flow-work [--jobs N]     (the same, counted: statements, WAL, CPU)
    .venv/bin/python -m bench redis-work [--jobs N]    (Redis server work per job, all systems)
    .venv/bin/python -m bench redis-instr [--jobs N]   (Redis server instructions a job, callgrind)
    .venv/bin/python -m bench walpages [--jobs N]      (SQLite WAL pages per job, by B-tree)
    .venv/bin/python -m bench perjob [--callgrind]     (SQLite statements, VM steps, instructions)
    .venv/bin/python -m bench rowshape [--callgrind]   (SQLite's per-job cost, one change at a time)

Installs the peers into bench/.venv-peers (and arq into bench/.venv-peers-arq), then for each
engine runs every system on the same workloads, round after round, in A B ... B A order so
that machine drift cancels; measures the raw engine limits; profiles tenure's worker; writes
bench/REPORT.md and bench/results/latest.json. Exits non-zero if any measurement failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import engines, peers, pg_stats, profiling, rawlimits, report
from bench.systems import SYSTEMS, System

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CLIENT_TIMEOUT_S = 150.0

FULL = {
    "jobs": 10_000,
    "sleep_jobs": 2_000,
    "latency_jobs": 100,
    "gap_ms": [10, 30],
    "latency_cap": 10.0,
    "enqueue_cap": 4.0,
    "drain_cap": 6.0,
}
SMOKE = {
    "jobs": 200,
    "sleep_jobs": 100,
    "latency_jobs": 5,
    "gap_ms": [5, 10],
    "latency_cap": 3.0,
    "enqueue_cap": 2.0,
    "drain_cap": 5.0,
}
SMOKE_SYSTEMS = {"tenure", "huey", "dramatiq", "procrastinate"}  # one peer per engine


def run_client(
    system: System, engine: engines.Engine, layout: str, params: dict[str, Any], workdir: Path
) -> dict[str, Any]:
    url = engine.url_for(system.key)
    spec = {
        **params,
        "system": system.key,
        "engine": engine.name,
        "url": url,
        "layout": layout,
        "workdir": str(workdir),
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_URL": url, "BENCH_ENGINE": engine.name}
    env.pop("TENURE_URL", None)
    pgids = workdir / "pgids"
    pgids.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [peers.python(system.venv), "-m", "bench.client", json.dumps(spec)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=open(workdir / f"client-{system.key}-{layout}.log", "ab"),  # noqa: SIM115
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return {"error": f"client timed out after {CLIENT_TIMEOUT_S:g} s"}
    finally:
        # Worker groups the client started and could not end (it crashed or was killed).
        if pgids.exists():
            for line in pgids.read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(int(line), signal.SIGKILL)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": f"client exited with {proc.returncode} and no result"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def tenure_ready(engine: engines.Engine) -> str | None:
    """Why tenure's store for this engine cannot be benchmarked yet, or None."""
    engine.reset()
    code = (
        "import tenure, sys\n"
        "app = tenure.App(sys.argv[1])\n"
        "@app.job\n"
        "def probe(n): pass\n"
        "probe.dispatch_many([(1,), (2,)]); probe.dispatch(3)\n"
        "assert app.counts()['queued'] == 3, app.counts()\n"
        "app.close()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, engine.url_for("tenure")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"tenure's {engine.name} store does not work yet: {last}"
    return None


def main() -> int:
    if sys.argv[1:2] == ["doctor-corpus"]:  # a separate benchmark with its own options
        from bench.doctor_corpus.score import main as doctor_corpus

        return doctor_corpus(sys.argv[2:])
    if sys.argv[1:2] == ["doctor-standard"]:  # the time-budget standard's corpus
        from bench.doctor_corpus.standard.score import main as doctor_standard

        return doctor_standard(sys.argv[2:])
    if sys.argv[1:2] == ["retention"]:
        from bench.retention import main as retention

        return retention(sys.argv[2:])
    if sys.argv[1:2] == ["flow"]:  # flow control's cost: limited drain against plain
        from bench.flow import main as flow

        return flow(sys.argv[2:])

    if sys.argv[1:2] == ["rawloops"]:
        from bench.raw_loops import main as rawloops

        return rawloops(sys.argv[2:])
    if sys.argv[1:2] == ["walpages"]:  # SQLite's pages written per job (issue 35)
        from bench.wal_pages import main as walpages

        return walpages(sys.argv[2:])
    if sys.argv[1:2] == ["perjob"]:  # SQLite's statements, VM steps, instructions a job (35)
        from bench.per_job import main as perjob

        return perjob(sys.argv[2:])
    if sys.argv[1:2] == ["rowshape"]:  # SQLite's per-job cost, one suspect at a time (35)
        from bench.row_shape import main as rowshape

        return rowshape(sys.argv[2:])
    if sys.argv[1:2] == ["flow-work"]:  # flow control's work per job, counted (issue 31)
        from bench.flow_work import main as flow_work

        return flow_work(sys.argv[2:])
    if sys.argv[1:2] == ["redis-instr"]:  # the Redis server's instructions a job (issue 32)
        from bench.redis_instr import main as redis_instr

        return redis_instr(sys.argv[2:])
    if sys.argv[1:2] == ["redis-work"]:  # the Redis server's work per job (issue 32)
        from bench.redis_work import main as redis_work

        return redis_work(sys.argv[2:])
    if sys.argv[1:2] == ["walk"]:
        from bench.walk import main as walk

        return walk(sys.argv[2:])
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI (< 2 min)")
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (smoke: 1)")
    parser.add_argument("--systems", default="", help="only these systems (comma-separated)")
    parser.add_argument("--no-extras", action="store_true", help="skip raw limits and profile")
    parser.add_argument(
        "--name", default="", help="write results/NAME.json and results/NAME.md, not REPORT.md"
    )
    args = parser.parse_args()
    params = SMOKE if args.smoke else FULL
    rounds = args.rounds or (1 if args.smoke else 3)
    wanted = set(filter(None, args.systems.split(","))) or (
        SMOKE_SYSTEMS if args.smoke else {s.key for s in SYSTEMS}
    )
    started = time.monotonic()
    notes: list[str] = []
    for venv_name in sorted({s.venv for s in SYSTEMS if s.key in wanted}):
        peers.ensure(venv_name, notes)

    results: dict[str, Any] = {
        "command": "python -m bench " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "smoke": args.smoke,
        "rounds": rounds,
        "params": params,
        "machine": (
            f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "engines": {},
        "skipped": {},
        "errors": [],
        "load": [],
        "settings": {},
        "versions": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="tenure-bench-"))
    made: list[engines.Engine] = []
    try:
        run_engines(args, params, rounds, wanted, workdir, results, made)
    finally:
        for engine in made:
            engine.close()
    return finish(args, results, started, notes, workdir)


def run_engines(
    args: argparse.Namespace,
    params: dict[str, Any],
    rounds: int,
    wanted: set[str],
    workdir: Path,
    results: dict[str, Any],
    made: list[engines.Engine],
) -> None:
    for name in filter(None, args.engines.split(",")):
        engine = engines.make(name, workdir)
        made.append(engine)
        problem = engine.problem() or tenure_ready(engine)
        if problem:
            print(f"bench: skipping {name}: {problem}", file=sys.stderr, flush=True)
            results["skipped"][name] = problem
            continue
        systems = [s for s in SYSTEMS if name in s.engines and s.key in wanted]
        per_system: dict[str, dict[str, list[float]]] = {s.key: {} for s in systems}
        results["engines"][name] = {"describe": engine.describe(), "systems": per_system}
        for r in range(rounds):
            order = systems if r % 2 == 0 else list(reversed(systems))  # A B ... then ... B A
            # On PostgreSQL the drain is measured again in the planner's other states.
            for layout in ("one", "two", "sleep") + (
                pg_stats.LAYOUTS if name == "postgres" else ()
            ):
                for system in order:
                    if pg_stats.base_layout(layout) not in system.layouts:
                        continue
                    engine.reset()
                    # Other work on the machine shows up here: the report prints the range.
                    results["load"].append(os.getloadavg()[0])
                    t0 = time.monotonic()
                    result = run_client(system, engine, layout, params, workdir)
                    took = time.monotonic() - t0
                    print(
                        f"bench: {name} round {r + 1} {layout:5} {system.key:13} {took:5.1f} s "
                        + (result.get("error") or ""),
                        file=sys.stderr,
                        flush=True,
                    )
                    if "error" in result:
                        results["errors"].append(f"{name} {system.key} {layout}: {result['error']}")
                        continue
                    results["settings"][system.key] = result.pop("settings")
                    for key, value in result.items():
                        per_system[system.key].setdefault(key, []).append(value)


def finish(
    args: argparse.Namespace,
    results: dict[str, Any],
    started: float,
    notes: list[str],
    workdir: Path,
) -> int:
    ran = {key for data in results["engines"].values() for key in data["systems"]}
    for system in SYSTEMS:
        if system.key in ran:
            results["versions"][system.label] = peers.versions(system.venv, system.packages)
    if not args.no_extras:
        results["raw_limits"] = rawlimits.measure(
            [n for n in results["engines"]], smoke=args.smoke, workdir=workdir
        )
        results["profile"] = profiling.profile(
            [n for n in results["engines"]], smoke=args.smoke, workdir=workdir
        )
    results["wall_s"] = time.monotonic() - started
    results["notes"] = notes
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    name = args.name or ("smoke" if args.smoke else "latest")
    (out / f"{name}.json").write_text(json.dumps(results, indent=1))
    target = out / "SMOKE.md" if args.smoke else BENCH / "REPORT.md"
    if args.name:  # a partial run (say, the topologies) must not replace the whole report
        target = out / f"{name}.md"
    target.write_text(report.render(results))
    print(f"bench: wrote {target.relative_to(ROOT)} in {results['wall_s']:.0f} s", file=sys.stderr)
    for error in results["errors"]:
        print(f"bench: FAILED {error}", file=sys.stderr)
    if os.environ.get("CI") == "true" and results["skipped"]:
        # under CI an engine that cannot run is a broken harness or store, not a footnote
        print(f"bench: CI=true and engines were skipped: {results['skipped']}", file=sys.stderr)
        return 1
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

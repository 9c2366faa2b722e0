"""The Redis server's work per job, for tenure and the Redis peers (issue 32):

    .venv/bin/python -m bench redis-work [--jobs N] [--rounds R] [--systems tenure,huey,...]

Starts a private redis-server on a free port (so `INFO commandstats` and `INFO cpu`, which are
server-wide, count this run's traffic only and never another tenant's), then per system: starts
one worker, warms it up, pauses it (SIGSTOP), enqueues N no-op jobs one by one, resumes it and
waits until all N ran. Server counters are read before and after each half, and the script prints
per job: commands (every command the server ran, including those run inside scripts), script
calls (EVAL/EVALSHA/FCALL), µs inside commands (commandstats usec; a script's inner commands are
counted inside its own usec too, so only top-level figures are summed), and server CPU µs
(used_cpu_sys + used_cpu_user). Peers run from bench/.venv-peers (--install-peers creates it);
a missing venv skips them loudly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import peers
from bench.systems import BY_KEY

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("tenure", "huey", "rq", "dramatiq")
SCRIPT_COMMANDS = ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro")
METER_COMMANDS = ("info", "ping", "flushdb", "client|setname", "client|setinfo", "hello")
DRAIN_TIMEOUT_S = 300.0
# The checkout's own tenure before any installed one: a worktree's bench measures its own code
# (the project venv may have tenure installed editable from another checkout).
PYTHONPATH = os.pathsep.join((str(ROOT / "src"), str(ROOT)))
TIMES = "\u00d7"


def wait_until_answering(client: Any, timeout_s: float, poll_s: float) -> None:
    """Ping a freshly started redis-server until it answers (ConnectionError after timeout_s)."""
    import redis

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(poll_s)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def snapshot(client: Any) -> dict[str, Any]:
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    return {
        "cmd": {
            name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
            for name, v in stats.items()
        },
        "cpu_s": float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]),
    }


def delta(before: dict[str, Any], after: dict[str, Any], jobs: int) -> dict[str, Any]:
    calls = scripts = 0
    usec = 0
    for name, (c, _u) in after["cmd"].items():
        c0, _u0 = before["cmd"].get(name, (0, 0))
        if name in METER_COMMANDS:
            continue
        calls += c - c0
        if name in SCRIPT_COMMANDS:
            scripts += c - c0
    # µs inside top-level commands: scripts' usec already includes their inner commands, so
    # inner command usec must not be added again. Inner commands cannot be told apart from
    # top-level ones of the same name, so sum usec of scripts plus non-script commands only
    # when no script ran; otherwise scripts plus commands no script of these systems calls.
    for name, (_c, u) in after["cmd"].items():
        _c0, u0 = before["cmd"].get(name, (0, 0))
        if name in METER_COMMANDS:
            continue
        if scripts == 0 or name in SCRIPT_COMMANDS or name.startswith(("brpop", "blpop", "bzpop")):
            usec += u - u0
    by_command = {
        name: round((c - before["cmd"].get(name, (0, 0))[0]) / jobs, 2)
        for name, (c, _u) in after["cmd"].items()
        if name not in METER_COMMANDS and c > before["cmd"].get(name, (0, 0))[0]
    }
    return {
        "by_command": dict(sorted(by_command.items(), key=lambda kv: -kv[1])),
        "commands": calls / jobs,
        "scripts": scripts / jobs,
        "usec": usec / jobs,
        "cpu_us": (after["cpu_s"] - before["cpu_s"]) * 1e6 / jobs,
    }


def child(spec: dict[str, Any]) -> None:
    """Inside the system's venv: one measured enqueue + drain; prints one JSON line."""
    import importlib

    import redis

    from bench import marks
    from bench.client import Workers, warm_up

    workdir = Path(spec["workdir"])
    os.environ[marks.MARKS_ENV] = str(workdir / f"marks-{spec['system']}")
    module = importlib.import_module(BY_KEY[spec["system"]].module)
    adapter = module.ADAPTER("redis", spec["url"])
    adapter.prepare()
    meter = redis.Redis.from_url(spec["url"])
    env = {
        **os.environ,
        **adapter.worker_env("one"),
        "PYTHONPATH": PYTHONPATH,
        "BENCH_URL": spec["url"],
        "BENCH_ENGINE": "redis",
    }
    workers = Workers(
        adapter.worker_commands("one"),
        env,
        workdir / f"worker-{spec['system']}.log",
        workdir / "pgids",
    )
    try:
        path = os.environ[marks.MARKS_ENV]
        base = warm_up(adapter, "noop", path, workers, 1)
        time.sleep(0.3)  # let the warm-up's last completion land before counting
        workers.pause(None)
        s0 = snapshot(meter)
        for n in range(spec["jobs"]):
            adapter.enqueue("noop", n)
        s1 = snapshot(meter)
        workers.signal(__import__("signal").SIGCONT)
        if not marks.wait_for_count(path, base + spec["jobs"], DRAIN_TIMEOUT_S):
            raise RuntimeError(f"drain: {marks.count(path) - base} of {spec['jobs']} ran")
        s2 = snapshot(meter)
    finally:
        workers.stop()
        adapter.close()
    jobs = spec["jobs"]
    print(json.dumps({"enqueue": delta(s0, s1, jobs), "drain": delta(s1, s2, jobs)}))


def run_system(system: str, url: str, jobs: int, workdir: Path) -> dict[str, Any] | str:
    venv = BY_KEY[system].venv
    python = peers.python(venv)
    if not Path(python).exists():
        where = peers.VENVS[venv][0].relative_to(ROOT)
        return f"skipped: {where} does not exist (`python -m bench` installs it)"
    spec = {"system": system, "url": url, "jobs": jobs, "workdir": str(workdir)}
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "BENCH_URL": url, "BENCH_ENGINE": "redis"}
    env.pop("TENURE_URL", None)
    proc = subprocess.run(
        [python, "-m", "bench.redis_work", "--child", json.dumps(spec)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DRAIN_TIMEOUT_S + 120,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"failed: {last}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def measure(jobs: int, rounds: int, systems: list[str]) -> dict[str, Any]:
    """Every system, `rounds` times in A B .. B A order, on a private redis-server."""
    import redis

    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-work: needs redis-server on PATH (a private server)")
    workdir = Path(tempfile.mkdtemp(prefix="tenure-redis-work-"))
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    results: dict[str, Any] = {"jobs": jobs, "rounds": rounds, "systems": {}, "skipped": {}}
    try:
        client = redis.Redis.from_url(url)
        wait_until_answering(client, timeout_s=10, poll_s=0.05)
        results["server"] = client.info("server")["redis_version"]
        order = [s for r in range(rounds) for s in (systems if r % 2 == 0 else systems[::-1])]
        results["load"] = []
        for system in order:
            if system in results["skipped"]:
                continue
            results["load"].append(os.getloadavg()[0])
            client.flushdb()  # the private server's own database, nobody else's
            got = run_system(system, url, jobs, workdir)
            if isinstance(got, str):
                results["skipped"][system] = got
                print(f"redis-work: {system} {got}", file=sys.stderr, flush=True)
                continue
            results["systems"].setdefault(system, []).append(got)
    finally:
        proc.terminate()
        proc.wait()
    return results


def best(runs: list[dict[str, Any]], half: str, key: str) -> float:
    return float(min(run[half][key] for run in runs))


def totals(runs: list[dict[str, Any]]) -> tuple[float, float]:
    """(commands, server CPU µs) per job, enqueue and drain together, each half's best."""
    halves = ("enqueue", "drain")
    return (
        sum(best(runs, h, "commands") for h in halves),
        sum(best(runs, h, "cpu_us") for h in halves),
    )


def table(results: dict[str, Any]) -> str:
    load = results.get("load") or []
    rows = [
        f"Redis {results.get('server', '?')}, private server; {results['jobs']} no-op jobs "
        f"enqueued one by one, drained by one worker; best of {results['rounds']} round(s)"
        + (f"; 1-minute load average {min(load):.1f}-{max(load):.1f}." if load else "."),
        "",
        "| system | step | commands/job | script calls/job | µs in commands/job "
        "| server CPU µs/job |",
        "|---|---|---|---|---|---|",
    ]
    for system, runs in results["systems"].items():
        for half in ("enqueue", "drain"):
            rows.append(
                f"| {system} | {half} | {best(runs, half, 'commands'):.1f} | "
                f"{best(runs, half, 'scripts'):.1f} | {best(runs, half, 'usec'):.0f} | "
                f"{best(runs, half, 'cpu_us'):.0f} |"
            )
        commands, cpu = totals(runs)
        rows.append(f"| {system} | **total** | **{commands:.1f}** | | | **{cpu:.0f}** |")
    for system, why in results["skipped"].items():
        rows.append(f"| {system} | {why} | | | | |")
    mine = results["systems"].get("tenure")
    peers_ = [s for s in results["systems"] if s != "tenure"]
    if mine and peers_:
        t_commands, t_cpu = totals(mine)
        rows += [
            "",
            "tenure ÷ peer, enqueue and drain together (below 1: tenure makes the "
            "server work less):",
            "",
            "| per job | " + " | ".join(peers_) + " |",
            "|---|" + "---|" * len(peers_),
        ]
        theirs = {s: totals(results["systems"][s]) for s in peers_}
        rows.append(
            "| commands | "
            + " | ".join(f"{t_commands / theirs[s][0]:.2f}{TIMES}" for s in peers_)
            + " |"
        )
        rows.append(
            "| server CPU | "
            + " | ".join(f"{t_cpu / theirs[s][1]:.2f}{TIMES}" for s in peers_)
            + " |"
        )
    return "\n".join(rows)


SECTION = Path(__file__).with_name("redis_work.md")


def write_section(results: dict[str, Any], command: str) -> None:
    """bench/redis_work.md, which bench/report.py keeps in every REPORT.md (a full run does not
    measure it)."""
    when = time.strftime("%Y-%m-%d", time.gmtime())
    SECTION.write_text(
        "## Redis: the server's work per job (issue 32, measured apart)\n\n"
        f"Measured on {when} by:\n\n```sh\n.venv/bin/{command}\n```\n\n"
        "Every command the server ran (those inside scripts and functions too) and its CPU "
        "(`INFO commandstats`, `INFO cpu` deltas of a private redis-server), per job; see "
        "bench/redis_work.py. The machine is shared: compare within this table, not with "
        "other runs.\n\n" + table(results) + "\n"
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(json.loads(argv[1]))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench redis-work", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--install-peers", action="store_true", help="create bench/.venv-peers first if missing"
    )
    parser.add_argument(
        "--write", action="store_true", help="write bench/redis_work.md (kept in REPORT.md)"
    )
    args = parser.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in BY_KEY]
    if unknown:
        parser.error(f"unknown systems {unknown}; expected some of {', '.join(SYSTEMS)}")
    if args.install_peers:
        peers.ensure("peers", [])
    results = measure(args.jobs, args.rounds, systems)
    print(table(results))
    print(json.dumps(results))
    if args.write and results["systems"]:
        write_section(results, "python -m bench redis-work " + " ".join(argv))
    return 0 if results["systems"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

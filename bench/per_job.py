"""SQLite's work per job, in counts a loaded machine does not change (issue 35).

    .venv/bin/python -m bench perjob [--jobs N] [--callgrind]

- **statements and VM steps**: per statement of the raw guaranteed loop (bench/raw_loops.py)
  and of tenure's store loop (bench/rawlimits.py's STORE_LOOP), the statements a job runs and
  the engine's virtual-machine steps for each (sqlite3's trace callback names the statement,
  a progress handler called at every step counts them).
- **instructions** (`--callgrind`, needs valgrind): per job, the slope between a drain of N/5
  and one of N jobs, so start-up and set-up cancel: the raw loop, the store loop (both counted
  from the drain's first statement on) and `tenure worker --burst --concurrency 1` (the child
  and the supervisor apart; the intercept is the process's fixed start-up cost). The
  supervisor's figure is inflated: its ticks run per unit of time, and valgrind runs the drain
  some 50 times slower.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.raw_loops import SQLITE_RAW
from bench.rawlimits import STORE_LOOP

ROOT = Path(__file__).resolve().parents[1]

# Counting code put in front of each loop's drain (after its set-up and enqueue).
STEPS = """
import collections as _col, re as _re
_steps, _calls, _now = _col.Counter(), _col.Counter(), ["?"]
def _name(sql):
    return _re.sub(r"'[^']*'|\\b\\d+(\\.\\d+)?\\b", "?", " ".join(sql.split()))[:72]
def _traced(sql):
    _now[0] = _name(sql)
    _calls[_now[0]] += 1
def _step():
    _steps[_now[0]] += 1
    return 0
_conn = {conn}
_conn.set_trace_callback(_traced)
_conn.set_progress_handler(_step, 1)
import atexit as _atexit, json as _json
_atexit.register(lambda: print("STEPS", _json.dumps([_calls, _steps])))
"""
# Instructions counted from here on (valgrind --instr-atstart=no).
COUNT_FROM_HERE = (
    "import subprocess as _sp, os as _os\n"
    "_sp.run(['callgrind_control', '-i', 'on', str(_os.getpid())], capture_output=True)\n"
)
# `tenure worker ...`, its child given time to start: valgrind on a loaded machine takes
# minutes over what the supervisor waits for natively (child_process.STARTUP_TIMEOUT_S), and a
# child killed before it said Ready crashes attempts and spoils the count. "tenure" is the
# command's first word naming tenure, as _counted reads it.
WORKER = (
    "import runpy, sys, tenure\n"
    "import tenure.worker.child_process as started\n"
    "started.STARTUP_TIMEOUT_S = 1800.0\n"
    "sys.argv = ['tenure', *sys.argv[1:]]\n"
    "runpy.run_module('tenure', run_name='__main__')\n"
)
DRAIN_START = {"raw": "start, cpu =", "store": "start, done, cpu ="}
CONN = {"raw": "c", "store": "store.db.conn()"}


def _loop(kind: str, jobs: int, before_drain: str, workdir: Path) -> list[str]:
    """The command running `kind`'s loop over `jobs` jobs with `before_drain` in front of it."""
    code, path = (SQLITE_RAW, "") if kind == "raw" else (STORE_LOOP, "sqlite:///")
    marker = DRAIN_START[kind]
    if marker not in code:
        raise RuntimeError(f"the {kind} loop no longer has {marker!r}: update bench/per_job.py")
    code = code.replace(marker, before_drain + marker, 1)
    db = tempfile.mkdtemp(dir=workdir) + "/db.sqlite"
    return [sys.executable, "-c", code, path + db, str(jobs), *(["0"] if kind == "store" else [])]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}


def steps(jobs: int, workdir: Path) -> list[str]:
    import json

    lines = [
        f"Statements and SQLite VM steps per job ({jobs:,} jobs; `python -m bench perjob`):",
        "",
        "| loop | statement | runs a job | VM steps a job |",
        "|---|---|---|---|",
    ]
    for kind in ("raw", "store"):
        hook = STEPS.format(conn=CONN[kind])
        out = subprocess.run(
            _loop(kind, jobs, hook, workdir), capture_output=True, text=True, env=_env(), cwd=ROOT
        )
        found = re.search(r"^STEPS (.*)$", out.stdout, re.M)
        if out.returncode != 0 or found is None:
            lines.append(f"| {kind} | failed: {out.stderr.strip()[-200:]} | | |")
            continue
        calls, counted = json.loads(found.group(1))
        for sql, n in sorted(counted.items(), key=lambda kv: -kv[1]):
            lines.append(f"| {kind} | `{sql}` | {calls[sql] / jobs:.2f} | {n / jobs:.1f} |")
        total = sum(counted.values()) / jobs
        lines.append(f"| {kind} | **all** | {sum(calls.values()) / jobs:.2f} | **{total:.1f}** |")
    return [*lines, ""]


def _callgrind(command: list[str], out: Path, *, at_start: bool, env: dict[str, str]) -> None:
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            f"--instr-atstart={'yes' if at_start else 'no'}",
            f"--callgrind-out-file={out}.%p",
            *command,
        ],
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=True,
    )


def _counted(prefix: Path) -> dict[str, int]:
    """Instructions per process of one callgrind run: {command's first words: total}."""
    totals: dict[str, int] = {}
    for part in prefix.parent.glob(prefix.name + ".*"):
        text = part.read_text(errors="replace")
        cmd = re.search(r"^cmd:\s*(.*)$", text, re.M)
        total = re.search(r"^summary:\s*(\d+)", text, re.M)
        if cmd and total:
            words = cmd.group(1).split()
            name = next((w for w in words if w.startswith("tenure")), Path(words[-1]).name)
            totals[name] = totals.get(name, 0) + int(total.group(1))
    return totals


def instructions(jobs: int, workdir: Path) -> list[str]:
    small = max(jobs // 5, 1)
    lines = [
        f"Instructions per job (callgrind; the slope between {small:,} and {jobs:,} jobs, so "
        "start-up cancels; `python -m bench perjob --callgrind`):",
        "",
        "| loop | instructions a job | fixed (start-up) |",
        "|---|---|---|",
    ]
    for kind in ("raw", "store"):
        got = []
        for n in (small, jobs):
            prefix = workdir / f"cg-{kind}-{n}"
            _callgrind(_loop(kind, n, COUNT_FROM_HERE, workdir), prefix, at_start=False, env=_env())
            got.append(sum(_counted(prefix).values()))
        lines.append(f"| {kind} loop (drain only) | {(got[1] - got[0]) / (jobs - small):,.0f} | |")
    worker: dict[str, list[int]] = {}
    for n in (small, jobs):
        db = tempfile.mkdtemp(dir=workdir) + "/db.sqlite"
        env = {**_env(), "BENCH_URL": f"sqlite:///{db}", "BENCH_MARKS": f"{db}.marks"}
        enqueue = (
            "from bench.systems.tenure_sys import app, noop\n"
            f"app.store.migrate(); noop.dispatch_many([(i,) for i in range({n})]); app.close()\n"
        )
        subprocess.run([sys.executable, "-c", enqueue], env=env, cwd=ROOT, check=True)
        command = [sys.executable, "-c", WORKER, "worker", "--app"]
        command += ["bench.systems.tenure_sys:app", "--burst", "--concurrency", "1"]
        prefix = workdir / f"cg-worker-{n}"
        _callgrind(command, prefix, at_start=True, env=env)
        for name, total in _counted(prefix).items():
            worker.setdefault(name, []).append(total)
    for name, (few, many) in sorted(worker.items()):
        per_job = (many - few) / (jobs - small)
        label = {"tenure.worker.child": "worker's child", "tenure": "worker's supervisor"}
        lines.append(f"| {label.get(name, name)} | {per_job:,.0f} | {few - per_job * small:,.0f} |")
    return [*lines, ""]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench perjob", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--callgrind", action="store_true", help="instructions too (valgrind)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="tenure-perjob-"))
    lines = steps(args.jobs, workdir)
    if args.callgrind:
        lines += instructions(args.jobs, workdir)
    print("\n".join(lines))
    return 0

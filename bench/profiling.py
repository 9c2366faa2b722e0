"""A py-spy profile of tenure's worker draining no-op jobs, summarised for the report.

py-spy samples every thread of the supervisor and of its child without changing the code and
drops idle samples (threads blocked in select, sleep or a lock), so the shares below are of the
time the worker spends *working*: where a no-op job's cost goes.
"""

from __future__ import annotations

import collections
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import engines, peers

ROOT = Path(__file__).resolve().parents[1]
APP = "bench.systems.tenure_sys:app"


def profile(engine_names: list[str], *, smoke: bool, workdir: Path) -> dict[str, Any]:
    jobs = 300 if smoke else 10_000
    pyspy = Path(peers.python("peers")).parent / "py-spy"
    lines: list[str] = []
    for name in engine_names:
        engine = engines.make(name, workdir)
        engine.reset()
        url = engine.url_for("tenure")
        env = {"PYTHONPATH": str(ROOT), "BENCH_URL": url, "BENCH_MARKS": str(workdir / "p.bin")}
        enqueue = (
            "from bench.systems.tenure_sys import noop, app\n"
            f"noop.dispatch_many([(n,) for n in range({jobs})]); app.close()\n"
        )
        subprocess.run([sys.executable, "-c", enqueue], env=env, cwd=ROOT, check=True)
        out = workdir / f"profile-{name}.txt"
        worker = [sys.executable, "-m", "tenure", "worker", "--app", APP, "--burst"]
        started = time.monotonic()
        proc = subprocess.run(
            [str(pyspy), "record", "-r", "250", "-s", "-f", "raw", "-o", str(out), "--", *worker],
            env={**env, "PATH": "/usr/bin:/bin"},
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - started
        if proc.returncode != 0 or not out.exists():
            lines.append(f"- {name}: py-spy failed: {proc.stderr.strip()[-300:]}")
            continue
        lines += summarise(name, out, jobs, took)
    return {"lines": lines}


# The worker's slot loop, since slot.py was split (async attempts and the host protocol apart)
SLOT_LOOP_FILES = ("slot.py", "slot_host.py", "async_attempt.py", "supervisor.py")


def classify(stack: list[str]) -> str:
    text = ";".join(stack)
    leaf = stack[-1] if stack else ""
    if "child.py" in text and ("serve" in text or "run_one" in text):
        return "child process: reading the pipe, running the job, answering"
    if "_renew_leases" in text or "_guard_" in text or "_heartbeat_loop" in text:
        return "supervisor: heartbeat and lease guard threads"
    if "_rescue" in text:
        return "supervisor: sweep (rescue, retention)"
    if "logging" in text or "_log_end" in text or "log.info" in leaf:
        return "supervisor: logging (one INFO line per job)"
    if "reserve" in text:
        return "supervisor: store (end_attempt, or reserve when idle)"
    if "complete" in text or "end_attempt" in text:
        return "supervisor: store.end_attempt"
    if "wait_for_work" in text:
        return "supervisor: store.wait_for_work"
    if "child_process.py" in text:
        return "supervisor: pipe to the child (json + write + select/read)"
    if "payload" in text:
        return "supervisor: payload.decode"
    if any(name in text for name in SLOT_LOOP_FILES):
        return "supervisor: slot/fetch loop bookkeeping (threads, queues, conditions)"
    return "other (interpreter start-up, imports, exit)"


def summarise(name: str, path: Path, jobs: int, took: float) -> list[str]:
    buckets: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = waiting = 0
    for raw in path.read_text().splitlines():
        stack_text, _, count_text = raw.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        stack = [f for f in stack_text.split(";") if not f.startswith("process ")]
        if stack and is_waiting(stack[-1]):
            waiting += count  # py-spy does not count a thread blocked on a lock as idle
            continue
        total += count
        buckets[classify(stack)] += count
        if stack:
            leaves[short(stack[-1])] += count
    out = [
        f"### {name}: `tenure worker --burst` draining {jobs:,} no-op jobs "
        f"({took:.1f} s under py-spy at 250 Hz, {total:,} working samples; {waiting:,} more "
        "samples of threads blocked on a lock or condition left out)",
        "",
        "| where the non-idle time goes | share |",
        "|---|---|",
    ]
    for bucket, count in buckets.most_common():
        out.append(f"| {bucket} | {100 * count / max(total, 1):.0f}% |")
    out += ["", "Hottest leaf functions:", ""]
    out += [f"- {100 * c / max(total, 1):.1f}% `{leaf}`" for leaf, c in leaves.most_common(10)]
    out.append("")
    return out


def is_waiting(leaf: str) -> bool:
    func = leaf.partition(" (")[0]
    return "threading.py" in leaf and func.rsplit(".", 1)[-1] in ("wait", "acquire", "join")


def short(frame: str) -> str:
    # "execute (tenure/stores/sqlite.py:123)" -> keep function and file tail
    func, _, where = frame.partition(" (")
    where = where.rstrip(")")
    parts = where.split("/")
    return f"{func} ({'/'.join(parts[-2:])})"

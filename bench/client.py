"""One phase of one system, run inside that system's own venv:

    python -m bench.client '{"system": ..., "layout": "one" | "two" | "sleep", ...}'

Starts the system's workers, warms them up, and measures; prints one JSON line of figures.
The worker side is paused with SIGSTOP while jobs are enqueued, then resumed: enqueueing is
timed without workers competing for the 2 cores, and the drain is timed on a full queue with
every worker already warm, for every system alike.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import marks, pg_stats
from bench.memory import tree_pss_mb
from bench.systems import BY_KEY, Adapter

ROOT = Path(__file__).resolve().parents[1]
FIRST_WARM_TIMEOUT_S = 60.0  # the first warm-up job also waits for the workers to start
WARM_TIMEOUT_S = 20.0
WARM_ROUNDS = 30
LATENCY_JOB_TIMEOUT_S = 10.0
STOP_GRACE_S = 3.0
PAUSE_ATTEMPTS = 200
LATENCY_BASE = 1_000_000_000  # job numbers of latency probes; drained jobs are 0..N-1
EARLIER_BASE = 2 * LATENCY_BASE  # job numbers of the drain before a `one-drained` phase
EARLIER_TIMEOUT_S = 120.0


class Workers:
    """The worker commands of one phase, each in its own process group (pause, resume, end)."""

    def __init__(self, commands: list[list[str]], env: dict[str, str], log: Path, pgids: Path):
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        for command in commands:
            proc = subprocess.Popen(
                command,
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
            self.procs.append(proc)
            # The harness reads this to clean up if this client itself is killed.
            with open(pgids, "a") as f:
                f.write(f"{proc.pid}\n")

    def signal(self, signum: int) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

    def pause(self, sqlite_path: str | None) -> None:
        """SIGSTOP the workers at a point where none holds SQLite's write lock: a worker paused
        inside a write transaction would lock the enqueuing client out of the file."""
        for _ in range(PAUSE_ATTEMPTS):
            self.signal(signal.SIGSTOP)
            if sqlite_path is None or not sqlite_locked(sqlite_path):
                return
            self.signal(signal.SIGCONT)
            time.sleep(random.uniform(0.001, 0.02))  # let the lock holder commit, then retry
        raise RuntimeError(f"could not pause the workers outside a write in {PAUSE_ATTEMPTS} tries")

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"worker {proc.args!r} exited with {proc.returncode}")

    def stop(self) -> None:
        self.signal(signal.SIGCONT)
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        # Whatever is left (slow graceful shutdowns, pool children) is not being measured.
        self.signal(signal.SIGKILL)
        for proc in self.procs:
            proc.wait()
        self.log.close()


def sqlite_locked(path: str) -> bool:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


def warm_up(adapter: Adapter, kind: str, path: str, workers: Workers, expected: int) -> int:
    """Run warm-up jobs until every job-executing process has run one; return marks so far."""
    seen: set[int] = set()
    number = -1
    for round_ in range(WARM_ROUNDS):
        batch = max(2, 2 * expected)
        target = marks.count(path) + batch
        for _ in range(batch):
            adapter.enqueue(kind, number)
            number -= 1
        timeout = FIRST_WARM_TIMEOUT_S if round_ == 0 else WARM_TIMEOUT_S
        if not marks.wait_for_count(path, target, timeout):
            workers.check_alive()
            raise RuntimeError(f"warm-up: {marks.count(path)} of {target} jobs ran in {timeout} s")
        seen = {m.tag for m in marks.read(path) if m.n < 0}
        if len(seen) >= expected:
            break
    return marks.count(path)


def latency(adapter: Adapter, path: str, jobs: int, gap_ms: tuple[float, float], cap: float):
    """Dispatch `jobs` no-op jobs one at a time to an idle worker; ms from dispatch to start."""
    rng = random.Random(7)  # the same idle gaps for every system
    out: list[float] = []
    end = time.monotonic() + cap
    for i in range(jobs):
        # An idle gap, part of the workload: the worker must be waiting, not mid-loop.
        time.sleep(rng.uniform(*gap_ms) / 1000)
        target = marks.count(path) + 1
        sent = time.time()
        adapter.enqueue("noop", LATENCY_BASE + i)
        if not marks.wait_for_count(path, target, LATENCY_JOB_TIMEOUT_S):
            raise RuntimeError(f"latency probe {i} did not start within {LATENCY_JOB_TIMEOUT_S} s")
        started = next(m.at for m in reversed(marks.read(path)) if m.n == LATENCY_BASE + i)
        out.append((started - sent) * 1000)
        if time.monotonic() >= end:
            break
    return out


def drain_rate(path: str, expected: int, cap: float, before: int) -> dict[str, float]:
    """Wait for the queued jobs to run (or `cap` s); jobs/s from the first to the last end."""
    marks.wait_for_count(path, before + expected, cap)
    times = sorted(m.at for m in marks.read(path) if 0 <= m.n < LATENCY_BASE)
    if len(times) < 2:
        raise RuntimeError(f"drain: only {len(times)} of {expected} jobs ran in {cap} s")
    return {"rate": (len(times) - 1) / (times[-1] - times[0]), "done": len(times)}


def earlier_drain(adapter: Adapter, path: str, jobs: int) -> int:
    """`one-drained`: the statistics a finished drain leaves (see bench/pg_stats.py); return
    the marks so far."""
    target = marks.count(path) + jobs
    numbers = [EARLIER_BASE + i for i in range(jobs)]
    if adapter.has_bulk:
        adapter.enqueue_bulk("noop", numbers)
    else:
        adapter.enqueue_loop("noop", range(numbers[0], numbers[-1] + 1), float("inf"))
    if not marks.wait_for_count(path, target, EARLIER_TIMEOUT_S):
        raise RuntimeError(f"earlier drain: {marks.count(path)} of {target} jobs ran")
    pg_stats.analyze(adapter.url)
    return marks.count(path)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    system = BY_KEY[spec["system"]]
    stats = pg_stats.STATES.get(spec["layout"])  # None: as the engine left the tables
    layout = pg_stats.base_layout(spec["layout"])
    module = importlib.import_module(system.module)
    adapter: Adapter = module.ADAPTER(spec["engine"], spec["url"])
    workdir = Path(spec["workdir"])
    path = str(workdir / f"marks-{system.key}-{spec['layout']}.bin")
    # Marks are counted per phase: the same file name comes back every round and on every
    # engine, and a drain timed from an earlier phase's first mark would be meaningless.
    Path(path).unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        marks.MARKS_ENV: path,
        **adapter.worker_env(layout),
    }
    result: dict[str, Any] = {"settings": adapter.settings}
    adapter.prepare()
    kind = "sleep" if layout == "sleep" else "noop"
    jobs = spec["sleep_jobs"] if layout == "sleep" else spec["jobs"]
    workers = Workers(
        adapter.worker_commands(layout),
        env,
        workdir / f"worker-{system.key}-{spec['layout']}.log",
        workdir / "pgids",
    )
    try:
        before = warm_up(adapter, kind, path, workers, adapter.processes(layout))
        # Warm: every job-executing process has run a job, none is running one now.
        if stats is None:
            memory, processes = tree_pss_mb(proc.pid for proc in workers.procs)
            result[f"memory_{layout}"] = memory
            result[f"memory_{layout}_processes"] = processes
        elif stats == "drained":
            before = earlier_drain(adapter, path, max(10, jobs // 5))
        if layout == "one" and stats is None:
            lat = latency(
                adapter, path, spec["latency_jobs"], tuple(spec["gap_ms"]), spec["latency_cap"]
            )
            result["latency_p50_ms"] = statistics.median(lat)
            result["latency_p95_ms"] = sorted(lat)[max(0, round(0.95 * len(lat)) - 1)]
            result["latency_n"] = len(lat)
            before = marks.count(path)
        sqlite_path = None
        if spec["engine"] == "sqlite":
            sqlite_path = spec["url"].removeprefix("sqlite:///")
        workers.pause(sqlite_path)
        bulk = layout != "one" and adapter.has_bulk
        started = time.perf_counter()
        if bulk:
            adapter.enqueue_bulk(kind, list(range(jobs)))
            queued = jobs
        else:
            queued = adapter.enqueue_loop(kind, range(jobs), time.monotonic() + spec["enqueue_cap"])
        rate = queued / (time.perf_counter() - started)
        if stats == "burst":
            pg_stats.analyze(adapter.url)
        if layout == "one" and stats is None:  # a statistics phase's enqueue is the same
            result["enqueue_one"] = rate
        elif layout == "two" and bulk:
            result["enqueue_bulk"] = rate
        if spec["engine"] == "postgres" and layout == "one":
            plan = adapter.explain_reserve()  # the plan the drain is about to run
            if plan:
                result[f"explain_{stats or 'none'}"] = plan
        workers.signal(signal.SIGCONT)
        drained = drain_rate(path, queued, spec["drain_cap"], before)
        if drained["done"] > queued:  # each job marks once: more marks than jobs is a bug here
            raise RuntimeError(f"drain: {drained['done']} marks for {queued} jobs queued")
        key = {"one": "drain_1", "two": "drain_2", "sleep": "sleep_16"}[layout]
        key += {None: "", "burst": "_analyzed", "drained": "_drained"}[stats]
        result[key] = drained["rate"]
        result[f"{key}_jobs"] = drained["done"]
        workers.check_alive()
    finally:
        workers.stop()
        adapter.close()
    return result


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        result = run(spec)
    except Exception as exc:
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        result = {"error": f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"}
        traceback.print_exc()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

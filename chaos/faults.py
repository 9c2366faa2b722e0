"""Fault schedules. Each runs on its own thread until `run.stop_faults` is set (or its count
is spent) and writes every fault it injects to faults.jsonl with the pids it hit, so the
checker can tell re-runs a fault explains from re-runs nothing explains. Sleeps here are the
fault schedule, never a wait for correctness."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from chaos.harness import WorkerProcess, children_of
from chaos.ledger import read_ledger
from chaos.runner import Run

Fault = Callable[[Run], None]


def _busy(run: Run, worker: WorkerProcess) -> list[str]:
    """Job ids the ledger shows running (started, not ended) under this worker."""
    pids = {worker.pid, *worker.children()}
    return [
        e.job_id
        for e in read_ledger(run.project.ledger_path)
        if e.ended is None and (e.ppid in pids or e.pid in pids)
    ]


def kill_random(every_s: float, target: str = "worker", replace: bool = True) -> Fault:
    """SIGKILL a random live worker (`worker`: the supervisor, whose children die with it by
    PDEATHSIG; `group`: supervisor and children at once; `child`: one child process only)
    every `every_s` seconds; the 'process manager' starts a replacement at once."""

    def fault(run: Run) -> None:
        while not run.stop_faults.wait(every_s):
            live = run.live()
            if not live:
                run.fill_pool()
                continue
            w = run.rng.choice(live)
            children = w.children()
            if target == "child":
                if not children:
                    continue
                pid = run.rng.choice(children)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                run.record_fault("sigkill-child", [pid], worker=w.pid)
                continue
            if target == "group":
                w.signal_group(signal.SIGKILL)
            else:
                w.signal(signal.SIGKILL)
            run.record_fault(f"sigkill-{target}", [w.pid, *children])
            with contextlib.suppress(Exception):
                w.wait(timeout=10)
            if replace:
                run.fill_pool()

    return fault


def stop_past_lease(
    times: int, lease: float, whole_group: bool, max_pause_s: float = 60.0
) -> Fault:
    """SIGSTOP a worker that is running a job, keep it stopped until another worker has
    re-run that job (its lease expired and was rescued), then SIGCONT it: its late result
    must be refused by fencing."""

    def fault(run: Run) -> None:
        done = 0
        while done < times and not run.stop_faults.is_set():
            target = None
            for w in run.live():
                busy = _busy(run, w)
                if busy:
                    target, jobs = w, busy
                    break
            if target is None:
                run.stop_faults.wait(0.1)
                continue
            pids = [target.pid, *target.children()]
            if whole_group:
                target.signal_group(signal.SIGSTOP)
            else:
                target.signal(signal.SIGSTOP)
            stopped_at = time.monotonic()
            run.record_fault("sigstop", pids, jobs=jobs, whole_group=whole_group)
            # another worker takes over within about one lease; keep the pool serving
            run.size += 1
            run.fill_pool()
            with contextlib.suppress(TimeoutError):
                _wait_rerun(run, jobs, stopped_at, lease, max_pause_s)
            paused = time.monotonic() - stopped_at
            if whole_group:
                target.signal_group(signal.SIGCONT)
            else:
                target.signal(signal.SIGCONT)
            run.record_fault("sigcont", pids, paused_s=round(paused, 2), jobs=jobs)
            run.size -= 1
            done += 1

    return fault


def _wait_rerun(run: Run, jobs: list[str], since: float, lease: float, limit: float) -> None:
    from chaos.harness import wait_until

    def rerun() -> bool:
        runs = read_ledger(run.project.ledger_path)
        again = {e.job_id for e in runs if e.job_id in jobs}
        attempts = {j: max(e.attempt for e in runs if e.job_id == j) for j in again}
        first = {j: min(e.attempt for e in runs if e.job_id == j) for j in again}
        paused_long_enough = time.monotonic() - since > lease
        return paused_long_enough and all(attempts.get(j, 0) > first.get(j, 0) for j in jobs)

    wait_until(rerun, timeout=limit, what="another worker to re-run the paused job", poll=0.1)


def _until_a_job_runs(run: Run, timeout_s: float = 60.0) -> bool:
    """Wait until some live worker runs a job: a wave that finds every worker still starting
    (a loaded machine) or idle interrupts nothing and proves nothing. False if the run ends."""
    deadline = time.monotonic() + timeout_s
    while not any(_busy(run, w) for w in run.live()):
        if run.stop_faults.wait(0.05) or time.monotonic() > deadline:
            return not run.stop_faults.is_set()
    return True


def deploy_waves(every_s: float, waves: int) -> Fault:
    """Rolling deploys: SIGTERM every worker, start their replacements at once (as a
    platform does), and let the old ones finish within --grace or hand jobs back."""

    def fault(run: Run) -> None:
        for _ in range(waves):
            if run.stop_faults.wait(every_s) or not _until_a_job_runs(run):
                return
            old = run.live()
            pids = [p for w in old for p in (w.pid, *w.children())]
            for w in old:
                w.terminated = True
                w.signal(signal.SIGTERM)
            run.record_fault("sigterm-wave", pids, workers=len(old))
            with run._lock:
                run.pool = [w for w in run.pool if w not in old]
            run.fill_pool()

    return fault


def store_outage(every_s: float, down_s: float, times: int, server: object) -> Fault:
    """Stop the store's server for `down_s` s, then start it again on the same data."""

    def fault(run: Run) -> None:
        for _ in range(times):
            if run.stop_faults.wait(every_s):
                return
            pids = [p for w in run.live() for p in (w.pid, *children_of(w.pid))]
            server.stop()  # type: ignore[attr-defined]
            run.record_fault("store-down", [], affected=pids)
            run.stop_faults.wait(down_s)
            server.start()  # type: ignore[attr-defined]
            run.record_fault("store-up", [], down_s=down_s)

    return fault


def combine(*faults: Fault) -> Fault:
    import threading

    def fault(run: Run) -> None:
        threads = [threading.Thread(target=f, args=(run,), daemon=True) for f in faults]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    return fault

"""One chaos run: workers, a load generator and a fault schedule, then settle and check."""

from __future__ import annotations

import contextlib
import logging
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenure.stores.base import get_job

from chaos.checker import Verdict, check
from chaos.harness import Project, WorkerProcess, wait_until
from chaos.ledger import JsonLines, read_ledger

log = logging.getLogger("chaos")

UNSETTLED = ("queued", "scheduled", "running")


@dataclass
class Load:
    """What the generator dispatches: `jobs` calls of `job` with arguments from `args(i)`."""

    jobs: int
    job: str = "work"
    args: Callable[[int, random.Random], tuple[Any, ...]] = lambda i, rng: (i, rng.uniform(0, 20))
    expect: str = "succeeded"
    chunk: int = 200
    rate: float | None = None  # chunks per second; None: as fast as the store takes them
    faulty: bool = False  # every execution is itself a fault (a memory hog, a stuck job)


@dataclass
class RunResult:
    scenario: str
    backend: str
    params: dict[str, Any]
    verdict: Verdict
    wall_s: float
    workers_started: int
    notes: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "backend": self.backend,
            "params": self.params,
            "wall_s": round(self.wall_s, 1),
            "workers_started": self.workers_started,
            "notes": self.notes,
            **self.verdict.summary(),
        }


class Run:
    """A project with a pool of workers kept at `size` by a 'process manager' (this object)."""

    def __init__(
        self,
        project: Project,
        *,
        workers: int,
        worker_args: list[str],
        seed: int = 0,
        skews: list[float] | None = None,
    ) -> None:
        self.project = project
        self.size = workers
        self.worker_args = worker_args
        self.rng = random.Random(seed)
        self.skews = skews or []
        self.dispatched = JsonLines(project.dir / "dispatched.jsonl")
        self.faults = JsonLines(project.dir / "faults.jsonl")
        self.expected: dict[str, str] = {}
        self.faulty: set[str] = set()
        self.only_dispatched = False
        self.ignored: set[str] = set()  # jobs put in the store by the scenario, not the load
        self.pool: list[WorkerProcess] = []
        self.stop_faults = threading.Event()
        self.load_done = threading.Event()
        self.errors: list[str] = []
        self.notes: list[str] = []
        self._lock = threading.Lock()

    # -- workers -----------------------------------------------------------------------
    def start_worker(self, *extra: str) -> WorkerProcess:
        with self._lock:
            index = len(self.project.workers)
            skew = self.skews[index % len(self.skews)] if self.skews else 0.0
            w = self.project.worker(*self.worker_args, *extra, skew=skew)
            self.pool.append(w)
            return w

    def fill_pool(self) -> None:
        """The process manager: keep `size` workers running."""
        with self._lock:
            self.pool = [w for w in self.pool if w.alive()]
            missing = self.size - len(self.pool)
        for _ in range(missing):
            self.start_worker()

    def live(self) -> list[WorkerProcess]:
        with self._lock:
            return [w for w in self.pool if w.alive()]

    def record_fault(self, kind: str, pids: list[int], **extra: Any) -> None:
        self.faults.append(kind=kind, pids=pids, **extra)

    # -- load --------------------------------------------------------------------------
    def generate(self, loads: list[Load]) -> None:
        try:
            for load in loads:
                job = getattr(self.project.jobs, load.job)
                for start in range(0, load.jobs, load.chunk):
                    calls = [
                        load.args(i, self.rng)
                        for i in range(start, min(load.jobs, start + load.chunk))
                    ]
                    handles = self._dispatch(job, calls)
                    for h in handles:
                        self.expected[h.id] = load.expect
                        if load.faulty:
                            self.faulty.add(h.id)
                    self.dispatched.append(ids=[h.id for h in handles], expect=load.expect)
                    if load.rate:
                        time.sleep(1.0 / load.rate)  # the load schedule, not a correctness wait
        except Exception as exc:  # reported, never swallowed
            self.errors.append(f"load generator: {type(exc).__name__}: {exc}")
        finally:
            self.load_done.set()

    def _dispatch(self, job: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
        """dispatch_many, retried through a store outage; the ids are fixed client-side, so
        a retry after a lost reply cannot create a job twice."""
        deadline = time.monotonic() + 120
        while True:
            try:
                handles: list[Any] = job.dispatch_many(calls)
                return handles
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise
                log.info("dispatch failed (%s), retrying", exc)
                self.stop_faults.wait(0.5)

    # -- settling ----------------------------------------------------------------------
    def unsettled(self) -> int:
        if self.only_dispatched:
            # the store holds other rows (corrupted on purpose): look at our jobs only
            with contextlib.suppress(Exception):
                store = self.project.app.store
                records = [get_job(store, j) for j in list(self.expected)]
                return sum(1 for r in records if r is None or r.state in UNSETTLED)
            return -1
        with contextlib.suppress(Exception):
            counts = self.project.app.counts()
            return sum(counts.get(s, 0) for s in UNSETTLED) + max(
                0, len(self.expected) - sum(counts.values())
            )
        return -1

    def settle(self, timeout: float) -> None:
        """Wait for every dispatched job to reach a final state, keeping workers alive."""
        if self.notes and "unsettled" in self.notes[-1]:
            return  # a first settle already gave up: do not wait all over again

        def done() -> bool:
            self.fill_pool()
            return self.load_done.is_set() and self.unsettled() == 0

        try:
            wait_until(done, timeout=timeout, what="every job to settle", poll=0.2)
        except TimeoutError as exc:
            self.notes.append(f"{exc}; {self.unsettled()} jobs unsettled (counted as lost)")

    def stop_workers(self) -> None:
        for w in self.live():
            w.terminated = True
            w.signal(signal.SIGTERM)
        for w in self.project.workers:
            try:
                w.wait(timeout=30)
            except Exception:
                self.notes.append(f"worker {w.pid} ignored SIGTERM for 30 s")
            w.kill()

    def verdict(self) -> Verdict:
        runs = read_ledger(self.project.ledger_path)
        return check(
            self.project.app.store,
            dict(self.expected),
            [r for r in runs if r.job_id not in self.ignored],
            self.faults.read(),
            self.faulty,
        )

    def died_of_a_job(self) -> list[int]:
        """Workers that exited without a fault aimed at them and without being told to."""
        hit = {int(p) for f in self.faults.read() for p in f.get("pids", [])}
        return [
            w.pid
            for w in self.project.workers
            if w.proc.returncode not in (None, 0) and w.pid not in hit and not w.terminated
        ]


def run_scenario(
    *,
    name: str,
    backend: str,
    project: Project,
    params: dict[str, Any],
    loads: list[Load],
    workers: int,
    worker_args: list[str],
    fault: Callable[[Run], None] | None,
    settle_s: float = 300.0,
    skews: list[float] | None = None,
    seed: int = 0,
    after: Callable[[Run, Verdict], None] | None = None,
    before: Callable[[Run], None] | None = None,
) -> RunResult:
    started = time.monotonic()
    run = Run(project, workers=workers, worker_args=worker_args, seed=seed, skews=skews)
    if before is not None:
        before(run)
    run.fill_pool()
    generator = threading.Thread(target=run.generate, args=(loads,), daemon=True)
    generator.start()
    injector = None
    if fault is not None:
        injector = threading.Thread(target=_guarded(run, fault), daemon=True)
        injector.start()
    generator.join()
    run.settle(settle_s)  # faults keep coming while the jobs settle: "for the whole run"
    run.stop_faults.set()
    if injector is not None:
        injector.join()
    run.settle(settle_s)  # whatever the last fault left running is rescued
    run.stop_workers()
    verdict = run.verdict()
    if after is not None:
        after(run, verdict)
    notes = run.notes + run.errors
    return RunResult(
        scenario=name,
        backend=backend,
        params=params,
        verdict=verdict,
        wall_s=time.monotonic() - started,
        workers_started=len(project.workers),
        notes=notes,
    )


def _guarded(run: Run, fault: Callable[[Run], None]) -> Callable[[], None]:
    def body() -> None:
        try:
            fault(run)
        except Exception as exc:
            run.errors.append(f"fault injector: {type(exc).__name__}: {exc}")

    return body


def ledger_path(project: Project) -> Path:
    return project.ledger_path

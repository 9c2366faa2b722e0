"""The worker supervisor: reserves jobs, hands them to slots, renews leases, rescues the
leases of dead workers, and stops gracefully. It owns no business rule: retry decisions are the
store's (from the job's policy), clocks are the store's."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TypeVar

from tenure.app import App
from tenure.logs import job_fields
from tenure.stores.base import EndResult, Reservation, WorkerRecord, WorkerRef
from tenure.worker.metrics import Metrics, serve
from tenure.worker.slot import Ended, Slot

log = logging.getLogger("tenure.worker")

T = TypeVar("T")

IDLE_WAIT_S = 1.0
STORE_RETRY_MAX_S = 5.0
# The worker kills an attempt whose lease it could not renew for this share of the lease,
# so the attempt is stopped before the store can hand the job to another worker.
LEASE_GIVE_UP_SHARE = 0.8
LEASE_WARN_SHARE = 0.5


@dataclass(frozen=True)
class WorkerOptions:
    app_spec: str
    queues: tuple[str, ...] = ("default",)
    concurrency: int = 1
    lease: float = 30.0
    grace: float = 8.0
    max_jobs: int | None = None
    max_time: float | None = None
    memory_mb: float | None = None
    burst: bool = False
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"

    def problems(self) -> list[str]:
        out = []
        if self.concurrency < 1:
            out.append(f"--concurrency: expected >= 1, got {self.concurrency}")
        if self.lease < 1:
            out.append(f"--lease: expected seconds >= 1, got {self.lease:g}")
        if self.grace < 0:
            out.append(f"--grace: expected seconds >= 0, got {self.grace:g}")
        if not self.queues or any(not q for q in self.queues):
            out.append(f"--queues: expected names separated by commas, got {self.queues!r}")
        if self.memory_mb is not None and self.memory_mb <= 0:
            out.append(f"--memory: expected MB > 0, got {self.memory_mb:g}")
        return out


class Worker:
    def __init__(self, app: App, options: WorkerOptions) -> None:
        self.app = app
        self.options = options
        self.store = app.store
        self.ref = WorkerRef(
            id=f"w-{secrets.token_hex(3)}", host=socket.gethostname(), pid=os.getpid()
        )
        self.stopping = threading.Event()
        self.hard_stop = threading.Event()
        self.finished = threading.Event()
        self.stop_reason = ""
        self.needs_children = any(not j.is_async for j in app.jobs.values())
        self.slots = [Slot(self, i) for i in range(options.concurrency)]
        self._idle = list(self.slots)
        self._idle_changed = threading.Condition()
        self._started = 0
        self._finished_count = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._registered_at = 0.0
        self.metrics = Metrics()

    # -- lifecycle ---------------------------------------------------------------------
    def run(self) -> int:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
        self._register()
        if self.options.metrics_port is not None:
            server = serve(self.options.metrics_port, self.options.metrics_host, self._metrics_page)
            log.info("metrics on http://%s:%d/metrics", *server.server_address[:2])
        for slot in self.slots:
            slot.thread.start()
        heartbeat = threading.Thread(
            target=self._heartbeat_loop, name="tenure-heartbeat", daemon=True
        )
        heartbeat.start()
        # A thread of its own: a heartbeat stuck on a dead store must not stop the guard.
        threading.Thread(target=self._guard_loop, name="tenure-lease-guard", daemon=True).start()
        log.info(
            "worker %s started: queues %s, concurrency %d, lease %g s, grace %g s",
            self.ref.id,
            ",".join(self.options.queues),
            self.options.concurrency,
            self.options.lease,
            self.options.grace,
        )
        try:
            self._fetch_loop()
        finally:
            self._drain()
            self.finished.set()
            heartbeat.join(timeout=5)
            self._call_store(lambda: self.store.worker_stopped(self.ref.id), attempts=3)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
            log.info(
                "worker %s stopped (%s) after %d jobs",
                self.ref.id,
                self.stop_reason or "done",
                self._finished_count,
            )
        return 0

    def _register(self) -> None:
        record = WorkerRecord(
            id=self.ref.id,
            host=self.ref.host,
            pid=self.ref.pid,
            queues=self.options.queues,
            concurrency=self.options.concurrency,
            started_at=0.0,
            last_seen_at=0.0,
        )
        self._call_store(lambda: self.store.register_worker(record))
        self._registered_at = self._call_store(self.store.now)

    def stop(self, reason: str, *, grace: float | None) -> None:
        """Stop reserving; after `grace` s (None: wait for running jobs) hand the rest back."""
        if not self.stopping.is_set():
            self.stop_reason = reason
            log.info("worker %s stopping: %s", self.ref.id, reason)
            self.stopping.set()
            if grace is not None:
                timer = threading.Timer(grace, self.hard_stop.set)
                timer.daemon = True
                timer.start()
        with self._idle_changed:
            self._idle_changed.notify_all()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stopping.is_set():
            log.warning("second %s: handing running jobs back now", name)
            self.hard_stop.set()
            return
        self.stop(f"{name} received", grace=self.options.grace)

    def _drain(self) -> None:
        for slot in self.slots:
            slot.inbox.put(None)
        for slot in self.slots:
            while slot.thread.is_alive():
                slot.thread.join(timeout=0.5)

    # -- reserving ---------------------------------------------------------------------
    def _fetch_loop(self) -> None:
        opts = self.options
        started = time.monotonic()
        next_rescue = 0.0
        failures = 0
        while not self.stopping.is_set():
            now = time.monotonic()
            if opts.max_time is not None and now - started >= opts.max_time:
                self.stop(f"--max-time {opts.max_time:g} s reached", grace=None)
                break
            if now >= next_rescue:
                next_rescue = now + min(max(opts.lease / 3, 0.5), 5.0)
                self._rescue()
            free = self._free_slots()
            if free == 0:
                self._wait_for_free_slot()
                continue
            if opts.max_jobs is not None:
                free = min(free, opts.max_jobs - self._started)
            reserved_at = time.monotonic()
            try:
                jobs = self.store.reserve(
                    queues=opts.queues, worker=self.ref, lease=opts.lease, limit=free
                )
                failures = 0
            except Exception as exc:
                failures += 1
                self._store_trouble("reserve", exc, failures)
                continue
            for res in jobs:
                self._hand_out(res, reserved_at)
            if opts.max_jobs is not None and self._started >= opts.max_jobs:
                self.stop(f"--max-jobs {opts.max_jobs} reached", grace=None)
                break
            if jobs:
                continue
            if opts.burst and self._free_slots() == len(self.slots):
                self.stop("--burst: the queues are empty", grace=None)
                break
            try:
                self.store.wait_for_work(queues=opts.queues, timeout=IDLE_WAIT_S)
            except Exception as exc:
                failures += 1
                self._store_trouble("wait", exc, failures)

    def _free_slots(self) -> int:
        with self._idle_changed:
            return len(self._idle)

    def _wait_for_free_slot(self) -> None:
        with self._idle_changed:
            if not self._idle and not self.stopping.is_set():
                self._idle_changed.wait(timeout=IDLE_WAIT_S)

    def _hand_out(self, res: Reservation, reserved_at: float) -> None:
        with self._idle_changed:
            slot = self._idle.pop()
            self._started += 1
        slot.assign(res, reserved_at)

    def slot_freed(self, slot: Slot) -> None:
        with self._idle_changed:
            self._idle.append(slot)
            self._idle_changed.notify_all()

    def _rescue(self) -> None:
        try:
            rescued = self.store.rescue_expired()
        except Exception as exc:
            log.warning("could not check for expired leases: %s", exc)
            return
        for r in rescued:
            log.warning(
                "job %s attempt %d crashed (lease expired with no result): %s",
                r.job_id,
                r.attempt,
                r.result.reason or r.result.state,
                extra={"job_id": r.job_id, "attempt": r.attempt, "outcome": "crashed"},
            )

    def _store_trouble(self, what: str, exc: Exception, failures: int) -> None:
        delay = min(STORE_RETRY_MAX_S, 0.2 * 2**failures)
        log.warning(
            "store unavailable during %s (%s: %s); retrying in %.1f s",
            what,
            type(exc).__name__,
            exc,
            delay,
        )
        self.stopping.wait(delay)

    # -- ending attempts ---------------------------------------------------------------
    def report(
        self, res: Reservation, ended: Ended, duration: float, *, chain: bool = False
    ) -> Reservation | None:
        """Record how an attempt ended. With `chain`, a success also claims the slot's next
        job in the same store call, when this worker may start one; that job is returned."""
        self._finished_count += 1
        self.metrics.attempt_ended(res.name, ended.outcome, duration)
        following: Reservation | None = None
        if ended.recorded is not None:
            result: EndResult | None = ended.recorded
        elif ended.outcome == "succeeded" and chain and self._take_start():
            result, following = self._complete_and_reserve(res)
        elif ended.outcome == "succeeded":
            result = self._call_store(
                lambda: self.store.complete(job_id=res.job_id, token=res.token),
                attempts=self._store_attempts(),
            )
        else:
            result = self._call_store(
                lambda: self.store.end_attempt(
                    job_id=res.job_id,
                    token=res.token,
                    outcome=ended.outcome,
                    error=ended.error or ended.outcome,
                    traceback=ended.traceback,
                    permanent=ended.permanent,
                ),
                attempts=self._store_attempts(),
            )
        self._log_end(res, ended, duration, result)
        return following

    def _complete_and_reserve(
        self, res: Reservation
    ) -> tuple[EndResult | None, Reservation | None]:
        opts = self.options
        try:
            result, following = self.store.complete_and_reserve(
                job_id=res.job_id,
                token=res.token,
                queues=opts.queues,
                worker=self.ref,
                lease=opts.lease,
            )
        except Exception:
            # Recording the end matters; the next job can wait for the fetch loop. (Had the
            # failed call committed, `complete` is refused by fencing and any job it claimed is
            # rescued when its lease expires, as after a lost reply to `reserve`.)
            following = None
            result = self._call_store(
                lambda: self.store.complete(job_id=res.job_id, token=res.token),
                attempts=self._store_attempts(),
            )
        if following is None:
            self._give_back_start()
        return result, following

    def _take_start(self) -> bool:
        """Count one more started job, unless the worker is stopping or at --max-jobs."""
        with self._idle_changed:
            if self.stopping.is_set():
                return False
            if self.options.max_jobs is not None and self._started >= self.options.max_jobs:
                return False
            self._started += 1
            return True

    def _give_back_start(self) -> None:
        with self._idle_changed:
            self._started -= 1

    def _store_attempts(self) -> int:
        # Keep trying about as long as the lease lasts; after that the job will be rescued.
        return max(3, int(self.options.lease / STORE_RETRY_MAX_S) + 2)

    def _log_end(
        self, res: Reservation, ended: Ended, duration: float, result: EndResult | None
    ) -> None:
        where = f"job {res.job_id} {res.name} attempt {res.attempt}"
        fields = job_fields(
            res, outcome=ended.outcome, worker=self.ref.id, duration_s=round(duration, 4)
        )
        if result is None:
            log.error(
                "%s %s in %.2f s but the store could not record it; the lease will "
                "expire and the job will be rescued",
                where,
                ended.outcome,
                duration,
                extra=fields,
            )
        elif not result.accepted:
            log.warning(
                "%s %s in %.2f s, but its lease had been taken over: result refused (fencing)",
                where,
                ended.outcome,
                duration,
                extra=fields,
            )
        elif ended.outcome == "succeeded":
            log.info("%s succeeded in %.2f s", where, duration, extra=fields)
        else:
            log.warning(
                "%s %s in %.2f s: %s; %s -> %s",
                where,
                ended.outcome,
                duration,
                ended.error,
                result.reason,
                result.state,
                extra=fields,
            )

    def _call_store(self, call: Callable[[], T], attempts: int = 1_000_000) -> T:
        """Retry a store call through a short outage, backing off; give up after `attempts`."""
        failures = 0
        while True:
            try:
                return call()
            except Exception as exc:
                failures += 1
                if failures >= attempts:
                    log.error("store call failed %d times: %s", failures, exc)
                    return None  # type: ignore[return-value]
                delay = min(STORE_RETRY_MAX_S, 0.2 * 2**failures)
                log.warning(
                    "store unavailable (%s: %s); retrying in %.1f s", type(exc).__name__, exc, delay
                )
                time.sleep(delay)

    # -- leases ------------------------------------------------------------------------
    def _heartbeat_loop(self) -> None:
        interval = self.options.lease / 3
        next_beat = time.monotonic() + interval
        outage_logged = False
        while not self.finished.is_set():
            if time.monotonic() >= next_beat:
                next_beat = time.monotonic() + interval
                ok = self._renew_leases()
                if not ok and not outage_logged:
                    log.warning("cannot renew leases: the store is unreachable")
                outage_logged = not ok
            self.finished.wait(min(0.25, interval))

    def _guard_loop(self) -> None:
        while not self.finished.wait(0.1):
            self._guard_leases()

    def _renew_leases(self) -> bool:
        held = [(slot, slot.current) for slot in self.slots if slot.current is not None]
        sent_at = time.monotonic()
        try:
            lost = set(
                self.store.heartbeat(
                    worker=self.ref,
                    leases=[(r.job_id, r.token) for _, r in held if r],
                    lease=self.options.lease,
                )
            )
            self._check_restart()
        except Exception as exc:
            log.debug("heartbeat failed: %s", exc)
            self.metrics.renewed(False, 0)
            return False
        self.metrics.renewed(True, len(held))
        for slot, res in held:
            if res is None:
                continue
            if res.job_id in lost:
                slot.lose_lease(
                    res,
                    "its lease was taken over before it ended (the worker "
                    "could not renew it in time); stopped so it cannot run twice",
                )
            elif slot.current is res:
                slot.renewed_at = sent_at
        return True

    def _guard_leases(self) -> None:
        """Stop attempts whose lease this worker could not renew, before the lease expires."""
        lease = self.options.lease
        for slot in self.slots:
            res = slot.current
            if res is None:
                continue
            age = time.monotonic() - slot.renewed_at
            if age > lease * LEASE_GIVE_UP_SHARE:
                slot.lose_lease(
                    res,
                    f"the worker could not renew the lease for {age:.1f} s "
                    "(store unreachable?) and stopped the attempt before the lease "
                    "could expire",
                )
            elif age > lease * LEASE_WARN_SHARE:
                slot.warn_lease()

    def _check_restart(self) -> None:
        requested = self.store.restart_requested_at()
        if requested is not None and requested > self._registered_at:
            self.stop("`tenure restart` requested", grace=None)

    def _metrics_page(self) -> str:
        try:
            counts: dict[str, int] | None = self.store.counts()
        except Exception:  # a scrape during an outage still shows this worker's counters
            counts = None
        running = sum(1 for slot in self.slots if slot.current is not None)
        return self.metrics.render(running, counts)

    # -- async jobs --------------------------------------------------------------------
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """One event loop thread shared by every async attempt of this worker."""
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="tenure-async", daemon=True).start()
                self._loop = loop
            return self._loop

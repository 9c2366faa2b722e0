"""The worker supervisor: reserves jobs, hands them to slots, renews leases, rescues the
leases of dead workers, and stops gracefully. It owns no business rule: retry decisions are the
store's (from the job's policy), clocks are the store's."""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import random
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from tenure.app import App
from tenure.core import payload
from tenure.core.errors import ConfigError
from tenure.core.records import QueueCounts, Reservation, WorkerRecord, WorkerRef
from tenure.extras import install_line
from tenure.periodic import PeriodicTicker
from tenure.settings import WorkerOptions
from tenure.stores.base import Store
from tenure.worker.burst import BurstEnd
from tenure.worker.execute import Ended
from tenure.worker.leases import LeaseKeeper, Sweeper
from tenure.worker.messages import Pulse
from tenure.worker.metrics import Metrics, serve
from tenure.worker.recording import REFUSALS, Outage, Recorder, log_end, retrying
from tenure.worker.shutdown import Shutdown
from tenure.worker.slot import Slot
from tenure.worker.store_file import StoreFile, sqlite_path, store_label
from tenure.worker.unknown import Refusals, refusals, unknown_job

log = logging.getLogger("tenure.worker")

T = TypeVar("T")

IDLE_WAIT_S = 1.0
# A sweep due at a lease's lapse runs this much after it: the store rescues a lease that ended
# before its clock's now, not at it.
LAPSE_MARGIN_S = 0.05


class Then(enum.Enum):
    """What the fetch loop does after one pass (Worker.fetch_once): the waits are its
    driver's, so that a pass itself never sleeps and a test drives it on a clock of its own
    (huey's `loop(now)`)."""

    AGAIN = "again"  # it reserved jobs: look again at once
    WAIT_FOR_SLOT = "wait for a free slot"  # every slot is busy
    WAIT_FOR_WORK = "wait for work"  # nothing to reserve: the store's wait (LISTEN, BLPOP...)
    BACK_OFF = "back off"  # the store failed: wait before the next try
    STOP = "stop"  # the worker stops (asked to, --max-time, --max-jobs, --burst, refused)


class Worker:
    def __init__(self, app: App, options: WorkerOptions) -> None:
        self.app = app
        self.options = options
        self.ref = WorkerRef(
            id=f"w-{secrets.token_hex(3)}", host=socket.gethostname(), pid=os.getpid()
        )
        self.shutdown = Shutdown(self.ref.id, options.grace, self._running, self._wake)
        self.stopping = self.shutdown.requested
        self.hard_stop = self.shutdown.hard
        self.finished = threading.Event()
        self.needs_children = any(not j.is_async for j in app.jobs.values())
        self.slots = [Slot(self, i) for i in range(options.concurrency)]
        self._idle = list(self.slots)
        self._idle_changed = threading.Condition()
        self._started = 0
        self._finished_count = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._registered_at = 0.0
        self._store_file = StoreFile(None)
        self._burst: BurstEnd | None = None
        self._sweeper: Sweeper | None = None
        self.metrics = Metrics()
        self.periodic = PeriodicTicker(app)  # this worker's share of dispatching periodic jobs
        self._recorder_made: Recorder | None = None
        self._store: Store | None = None
        self.pulse = Pulse.create()
        self._rng = random.Random()  # the weighted queue order of each fetch
        # the fetch loop's clocks, on the time its passes are given (fetch_once)
        self._fetch_started: float | None = None  # the first pass: --max-time counts from it
        self._next_rescue = 0.0  # the first pass sweeps
        self._outage = Outage()  # the store's failures in a row (the back-off grows with them)

    @property
    def store(self) -> Store:
        # Opened on first use, not at construction, so that a store URL that cannot be opened
        # is reported by run() like any other refusal; then kept (the worker does not fork).
        if self._store is None:
            self._store = self.app.store
        return self._store

    # -- lifecycle ---------------------------------------------------------------------
    def run(self) -> int:
        self._check_encryption()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.shutdown.on_signal)
            signal.signal(signal.SIGINT, self.shutdown.on_signal)
        log.info(
            "worker %s using the store %s (from %s)",
            self.ref.id,
            store_label(self.app.describe_store(), self.app.url),
            self.app.url_source,
        )
        if not self._register():
            log.info(
                "worker %s stopped before it registered: %s", self.ref.id, self.shutdown.reason
            )
            return self.shutdown.exit_code
        self._store_file = StoreFile(sqlite_path(self.store, self.app.url))
        if self.options.metrics_port is not None:
            server = serve(self.options.metrics_port, self.options.metrics_host, self._metrics_page)
            log.info("metrics on http://%s:%d/metrics", *server.server_address[:2])
        for slot in self.slots:
            slot.thread.start()
        heartbeat = LeaseKeeper(self).start()
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
            if self._sweeper is not None:
                self._sweeper.stop()  # no further prune chunk while the worker winds down
            if self._running():
                # Said before the grace: if a deploy's SIGKILL ends it, the rescue of what still
                # ran names the deploy (causes.DEPLOY), not a vanished worker.
                stopping = replace(self._record, stopping_at=0.0)
                self._call_store(lambda: self.store.heartbeat(worker=stopping), attempts=2)
            self._drain()
            self.finished.set()
            heartbeat.join(timeout=5)
            # the registry row says it stopped (the store stamps the time, as at registering)
            stopped = replace(self._record, stopped_at=0.0)
            self._call_store(lambda: self.store.heartbeat(worker=stopped), attempts=3)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._store_file.close()
            self.pulse.close()
            log.info(
                "worker %s stopped (%s) after %d jobs",
                self.ref.id,
                self.shutdown.reason or "done",
                self._finished_count,
            )
        return self.shutdown.exit_code

    def _check_encryption(self) -> None:
        """A worker that could not open its app's encrypted jobs would fail each with a false
        reason: it refuses to start instead, naming what is missing."""
        encrypted = sorted(name for name, job in self.app.jobs.items() if job.encrypted)
        problem = payload.decryption_problem(install_line("crypto")) if encrypted else None
        if problem:
            shown = ", ".join(encrypted[:3]) + (", ..." if len(encrypted) > 3 else "")
            raise ConfigError(
                f"this app has encrypted=True jobs ({shown}) but the worker cannot decrypt "
                f"them: it needs {problem}"
            )

    def _register(self) -> bool:
        """Register with the store, retrying through an outage until a stop request; False
        when the worker stopped (asked to, or refused by the store) before it could."""
        record = WorkerRecord(
            id=self.ref.id,
            host=self.ref.host,
            pid=self.ref.pid,
            queues=self.options.queues,
            concurrency=self.options.concurrency,
            started_at=0.0,
            last_seen_at=0.0,
            known=tuple(sorted(self.app.jobs)),
        )
        self._record = record

        def register() -> float:
            self.store.heartbeat(worker=record)
            return self.store.now()

        registered_at = self._call_store(register, until=self.stopping)
        if registered_at is None:
            return False
        self._registered_at = registered_at
        return True

    def stop(self, reason: str, *, grace: float | None) -> None:
        """Stop reserving; after `grace` s (None: wait for running jobs) hand the rest back."""
        self.shutdown.request(reason, grace=grace)

    def _wake(self) -> None:
        if self.stopping.is_set():
            for slot in self.slots:
                slot.stop_claiming()
        with self._idle_changed:
            self._idle_changed.notify_all()

    def _running(self) -> int:
        return sum(1 for slot in self.slots if slot.current is not None)

    def _drain(self) -> None:
        for slot in self.slots:
            slot.inbox.put(None)
        for slot in self.slots:
            while slot.thread.is_alive():
                slot.thread.join(timeout=0.5)

    # -- reserving ---------------------------------------------------------------------
    def _fetch_loop(self) -> None:
        """Drive fetch_once with the monotonic clock, and do the waits it asks for."""
        while not self.stopping.is_set():
            then = self.fetch_once(time.monotonic())
            if then is Then.STOP:
                break
            if then is Then.WAIT_FOR_SLOT:
                self._wait_for_free_slot()
            elif then is Then.BACK_OFF:
                self.stopping.wait(self._outage.delay())
            elif then is Then.WAIT_FOR_WORK and not self._wait_for_work():
                break

    def fetch_once(self, now: float) -> Then:
        """One pass of the fetch loop at `now` (monotonic seconds, as its driver read them):
        the chores due then (the --max-time limit, the rescue sweep, the periodic tick), a
        reserve for the free slots, and what to do next. It waits for nothing itself."""
        opts = self.options
        if self._fetch_started is None:
            self._fetch_started = now
        if opts.max_time is not None and now - self._fetch_started >= opts.max_time:
            self.stop(f"--max-time {opts.max_time:g} s reached", grace=None)
            return Then.STOP
        if now >= self._next_rescue:
            self._next_rescue = now + self._rescue_interval()
            lapse = self._rescue(now)
            if lapse is not None and lapse > 0:
                # the earliest lease lapses before the next interval's sweep: sweep then, so a
                # crashed holder's attempt is rescued, and the jobs parked behind its
                # concurrency slot handed back, within its lease (a live holder's heartbeat
                # keeps its lease two thirds ahead, so a healthy worker sweeps no more often)
                self._next_rescue = min(self._next_rescue, now + lapse + LAPSE_MARGIN_S)
            if self._store_file_gone():
                return Then.STOP
        # about once a second; each due time claimed in the store. Checked here too, so a pass
        # with nothing due makes no call into the periodic module (the walk counts each one)
        if self.app.periodic_jobs and now >= self.periodic.next_tick:
            self.periodic.tick(now)
        free = self._free_slots()
        if free == 0:
            return Then.WAIT_FOR_SLOT
        if opts.max_jobs is not None:
            free = min(free, opts.max_jobs - self._started)
        reserved_at = time.monotonic()  # a lease's clock: real, not the pass's `now`
        try:
            jobs = self.store.reserve(
                queues=opts.queue_order(self._rng), worker=self.ref, lease=opts.lease, limit=free
            )
            self._outage.over()
        except REFUSALS as exc:
            self._refused(exc)
            return Then.STOP
        except Exception as exc:
            self._outage.failed("reserve", exc)
            return Then.BACK_OFF
        for res in jobs:
            self._hand_out(res, reserved_at)
        if opts.max_jobs is not None and self._started >= opts.max_jobs:
            self.stop(f"--max-jobs {opts.max_jobs} reached", grace=None)
            return Then.STOP
        if jobs:
            return Then.AGAIN
        if opts.burst and self._free_slots() == len(self.slots) and self._burst_done():
            return Then.STOP
        return Then.WAIT_FOR_WORK

    def _wait_for_work(self) -> bool:
        """The store's wait for new work (LISTEN, BLPOP, a poll); False if it refused us."""
        try:
            self.store.wait_for_work(queues=self.options.queues, timeout=self._idle_wait())
        except REFUSALS as exc:
            self._refused(exc)
            return False
        except Exception as exc:
            self._outage.failed("wait", exc)
            self.stopping.wait(self._outage.delay())
        return True

    def _rescue_interval(self) -> float:
        return min(max(self.options.lease / 3, 0.5), 5.0)

    def _store_file_gone(self) -> bool:
        problem = self._store_file.problem()
        if problem is None:
            return False
        self.shutdown.refused(problem, "its SQLite store file is gone")
        return True

    def _refused(self, exc: Exception) -> None:
        self.shutdown.refused(f"the store refused the worker: {exc}", "the store refused it")

    def _burst_done(self) -> bool:
        if self._burst is None:
            self._burst = BurstEnd(self.store, self.options.queues, self._rescue_interval() + 1)
        if not self._burst.done():
            return False
        self.stop("--burst: the queues are empty", grace=None)
        return True

    def _free_slots(self) -> int:
        with self._idle_changed:
            return len(self._idle)

    def _wait_for_free_slot(self) -> None:
        with self._idle_changed:
            if not self._idle and not self.stopping.is_set():
                self._idle_changed.wait(timeout=self._idle_wait())

    def _hand_out(self, res: Reservation, reserved_at: float) -> None:
        with self._idle_changed:
            slot = self._idle.pop()
            self._started += 1
        slot.assign(res, reserved_at)

    def slot_freed(self, slot: Slot) -> None:
        with self._idle_changed:
            self._idle.append(slot)
            self._idle_changed.notify_all()

    def _rescue(self, now: float) -> float | None:
        """Sweep; in how many seconds the earliest lease left lapses (None: none runs)."""
        if self._sweeper is None or self._sweeper.store is not self.store:
            self._sweeper = Sweeper(self.store)
        return self._sweeper.tick(now)

    def _idle_wait(self) -> float:
        """How long an idle pass may wait: at most IDLE_WAIT_S, less when a sweep is due."""
        return min(IDLE_WAIT_S, max(self._next_rescue - time.monotonic(), 0.01))

    # -- ending attempts ---------------------------------------------------------------
    @property
    def where(self) -> str:
        return f"{self.options.app_spec} on worker {self.ref.id}"

    def child_config(self) -> dict[str, Any]:
        """What a child needs to run and record this worker's attempts (see child.Child)."""
        return {
            "app": self.options.app_spec,
            # the supervisor's store, however it was chosen (--url): the child records there
            "url": self.app.url,
            "url_source": self.app.url_source,
            "worker": self.ref.id,
            "host": self.ref.host,
            "queues": list(self.options.queues),
            "weights": list(self.options.weights),
            "lease": self.options.lease,
            "memory_mb": self.options.memory_mb,
            "pulse_fd": self.pulse.fd,
            "log_level": logging.getLevelName(logging.getLogger("tenure").getEffectiveLevel()),
        }

    def unknown_job(self, res: Reservation) -> Ended:
        """The end of an attempt of a job this worker's code does not define (worker.unknown)."""
        try:
            seen = refusals(self.store, res.job_id, self.ref.id)
        except Exception as exc:  # the store is down: hand it back; the grace is checked later
            log.warning("job %s: could not read its refusals (%s); handed back", res.job_id, exc)
            seen = Refusals()
        return unknown_job(res, self.ref, self.where, self.options.unknown_grace, seen)

    def keep_memory_reading(self, res: Reservation, mb: float) -> None:
        """Keep a crashed attempt's last memory reading on it as a field (`AttemptRecord.
        memory_mb`, which the doctor's crash-loop rule reads), not only in its words: an attempt
        that dies before its first heartbeat has none yet. One heartbeat for its lease carries
        it before the end is recorded; crashes are rare, so the extra round trip is too."""
        try:
            self.store.heartbeat(
                worker=self.ref,
                leases=[(res.job_id, res.token)],
                lease=self.options.lease,
                memory={res.job_id: mb},
            )
        except Exception as exc:  # the end is still recorded; only the field is missing
            log.debug("could not keep the memory reading of job %s: %s", res.job_id, exc)

    def may_chain(self) -> bool:
        """May a child claim its slot's next job itself? Not when stopping, and not under
        --max-jobs, whose count only the fetch loop keeps exactly."""
        return not self.stopping.is_set() and self.options.max_jobs is None

    def count_start(self) -> None:
        with self._idle_changed:
            self._started += 1

    def attempt_recorded(
        self, name: str, outcome: str, duration: float, cause: str | None = None
    ) -> None:
        """A child recorded the end of an attempt."""
        self._finished_count += 1
        if self.options.metrics_port is not None:  # counted only where a page shows them
            self.metrics.attempt_ended(name, outcome, duration, cause)

    def report(
        self, res: Reservation, ended: Ended, duration: float, *, chain: bool = False
    ) -> Reservation | None:
        """Record how an attempt ended. With `chain`, a success also claims the slot's next
        job in the same store call, when this worker may start one; that job is returned."""
        self.attempt_recorded(res.name, ended.outcome, duration, ended.cause)
        following: Reservation | None = None
        recorder = self._recorder()
        if ended.to_record and chain and self._take_start():
            order = self.options.queue_order(self._rng)
            result, following = recorder.succeed_and_claim(res, ended, order)
            if following is None:
                self._give_back_start()
        else:
            result = recorder.end(res, ended)
        log_end(res, ended, duration, result, self.ref.id)
        return following

    def _recorder(self) -> Recorder:
        if self._recorder_made is None:
            self._recorder_made = Recorder(
                self.store, self.ref, lease=self.options.lease, interrupt=self.hard_stop,
                refused=self._refused,
            )  # fmt: skip
        return self._recorder_made

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

    def _call_store(
        self,
        call: Callable[[], T],
        attempts: int = 1_000_000,
        *,
        until: threading.Event | None = None,
    ) -> T | None:
        """Retry a store call through a short outage (see recording.retrying); default
        interrupt: a hard stop."""
        interrupt = self.hard_stop if until is None else until
        return retrying(call, attempts=attempts, interrupt=interrupt, refused=self._refused)

    def check_restart(self, requested: float | None) -> None:
        """Stop gracefully if `tenure restart` was asked for (at `requested`, as the heartbeat
        said) since this worker started."""
        if requested is not None and requested > self._registered_at:
            self.stop("`tenure restart` requested", grace=None)

    def _metrics_page(self) -> str:
        try:
            by_queue: dict[str, QueueCounts] | None = self.app.queue_counts()
        except Exception:  # a scrape during an outage still shows this worker's counters
            by_queue = None
        running = sum(1 for slot in self.slots if slot.current is not None)
        return self.metrics.render(running, by_queue)

    # -- async jobs --------------------------------------------------------------------
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """One event loop thread shared by every async attempt of this worker."""
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="tenure-async", daemon=True).start()
                self._loop = loop
            return self._loop


__all__ = ["Worker", "WorkerOptions"]

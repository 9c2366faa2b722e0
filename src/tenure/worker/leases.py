"""Keeping a worker's leases: renew them every lease/3, and stop an attempt whose lease the
worker could not renew before the store can hand its job to another worker."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from tenure.core.records import Rescued, WorkerRef
from tenure.core.retention import PRUNE_CHUNK, Pruned, pause_after
from tenure.settings import WorkerOptions
from tenure.stores.base import Store
from tenure.worker.messages import Pulse
from tenure.worker.metrics import Metrics
from tenure.worker.slot import Slot

log = logging.getLogger("tenure.worker")

# The worker kills an attempt whose lease it could not renew for this share of the lease,
# so the attempt is stopped before the store can hand the job to another worker.
LEASE_GIVE_UP_SHARE = 0.8
LEASE_WARN_SHARE = 0.5
# How often a worker prunes when the last chunk was not full (it rescues every tick).
PRUNE_EVERY_S = 10.0
# While chunks come back full, a tick goes on pruning, one chunk (one short transaction) at a
# time, for up to this long: a store finishing 1,000 jobs/s must not outgrow its pruning.
PRUNE_BUDGET_S = 0.25


class LeaseHost(Protocol):
    """What the lease keeper needs of its worker."""

    options: WorkerOptions
    finished: threading.Event
    metrics: Metrics
    ref: WorkerRef
    pulse: Pulse

    @property
    def slots(self) -> Sequence[Slot]: ...

    @property
    def store(self) -> Store: ...

    def check_restart(self, requested_at: float | None) -> None: ...


class LeaseKeeper:
    """The heartbeat (renew every lease/3) and the guard (stop what could not be renewed):
    each a loop around a step that takes the time as an input, so a test drives them."""

    def __init__(self, worker: LeaseHost, *, started: float | None = None) -> None:
        """`started`: the monotonic time the first beat counts from (None: now)."""
        self.worker = worker
        self.interval = worker.options.lease / 3
        self._next_beat = (time.monotonic() if started is None else started) + self.interval
        self._outage_logged = False

    def start(self) -> threading.Thread:
        """Start the heartbeat and the guard; return the heartbeat's thread (to join)."""
        heartbeat = threading.Thread(
            target=self._heartbeat_loop, name="tenure-heartbeat", daemon=True
        )
        heartbeat.start()
        # A thread of its own: a heartbeat stuck on a dead store must not stop the guard.
        threading.Thread(target=self._guard_loop, name="tenure-lease-guard", daemon=True).start()
        return heartbeat

    def _heartbeat_loop(self) -> None:
        wait = min(0.25, self.interval)
        while not self.worker.finished.is_set():
            self.heartbeat_once(time.monotonic())
            self.worker.finished.wait(wait)

    def heartbeat_once(self, now: float) -> None:
        """Renew the worker's leases if a beat is due at `now`."""
        if now < self._next_beat:
            return
        self._next_beat = now + self.interval
        ok = self._renew_leases()
        if not ok and not self._outage_logged:
            log.warning("cannot renew leases: the store is unreachable")
        self._outage_logged = not ok

    def _guard_loop(self) -> None:
        while not self.worker.finished.wait(0.1):
            self.worker.pulse.beat()  # the children's sign that the watchdog is here
            self.guard_leases(time.monotonic())

    def _renew_leases(self) -> bool:
        held = [(slot, slot.current) for slot in self.worker.slots if slot.current is not None]
        sent_at = time.monotonic()
        try:
            reply = self.worker.store.heartbeat(
                worker=self.worker.ref,
                leases=[(r.job_id, r.token) for _, r in held if r],
                lease=self.worker.options.lease,
                # each attempt's last memory reading: a rescue's evidence if this worker dies
                memory={r.job_id: s.memory[0] for s, r in held if r and s.memory},
            )
            self.worker.check_restart(reply.restart_requested_at)
        except Exception as exc:
            log.debug("heartbeat failed: %s", exc)
            self.worker.metrics.renewed(False, 0)
            return False
        self.worker.metrics.renewed(True, len(held))
        lost, cancel = set(reply.lost), set(reply.cancel)
        for slot, res in held:
            if res is None:
                continue
            if res.job_id in cancel:
                slot.cancel(res)
            if res.job_id in lost:
                slot.lose_lease(
                    res,
                    "its lease was taken over before it ended (the worker "
                    "could not renew it in time); stopped so it cannot run twice",
                )
            elif slot.current is res:
                slot.renewed_at = sent_at
        return True

    def guard_leases(self, now: float) -> None:
        """Stop attempts whose lease this worker could not renew, before the lease expires
        (`now`: the monotonic time, the clock of each slot's `renewed_at`)."""
        lease = self.worker.options.lease
        for slot in self.worker.slots:
            res = slot.current
            if res is None:
                continue
            age = now - slot.renewed_at
            if age > lease * LEASE_GIVE_UP_SHARE:
                slot.lose_lease(
                    res,
                    f"the worker could not renew the lease for {age:.1f} s "
                    "(store unreachable?) and stopped the attempt before the lease "
                    "could expire",
                )
            elif age > lease * LEASE_WARN_SHARE:
                slot.warn_lease()


class Sweeper:
    """The worker's maintenance tick (`Store.sweep`): every tick closes the attempts whose
    lease expired with no end (their worker died); every PRUNE_EVERY_S it also prunes what
    retention says is due, one bounded chunk at a time (each its own short transaction or
    script) while chunks come back full, for up to PRUNE_BUDGET_S. When the budget ends with
    chunks still full, a thread of its own goes on: one chunk each time the store has had as
    long as the last chunk took to itself (at most half of the time on the store), until a
    chunk comes back short. A tick's budget alone deletes a few thousand rows per tick, less
    than a store finishing 1,000 jobs/s ends; the fetch loop is never held longer than it.
    Every worker does it, leaderless: the store makes two sweeps at once take different rows."""

    def __init__(self, store: Store, *, chunk: int = PRUNE_CHUNK) -> None:
        self.store = store
        self.chunk = chunk
        self.next_prune = 0.0
        self.behind = False  # the last chunk was full: more is due now
        self.next_chunk = 0.0
        self._unlogged = Pruned()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self, now: float | None = None) -> float | None:
        """Rescue, and prune if due at `now` (monotonic seconds; None: the clock's now).
        Returns the sweep's Swept.next_lapse_in (None also when the store failed)."""
        started = time.monotonic()
        at = started if now is None else now  # the time the prune's due time is read against
        prune = at >= self.next_prune
        try:
            swept = self.store.sweep(prune=prune, limit=self.chunk)
            log_rescued(swept.rescued)
            pruned = swept.pruned
            chunk_at = started  # the budget is real time spent on the store
            while pruned.more and time.monotonic() - started < PRUNE_BUDGET_S:
                time.sleep(pause_after(time.monotonic() - chunk_at))  # others' turn
                chunk_at = time.monotonic()
                pruned = pruned + self.store.sweep(rescue=False, limit=self.chunk).pruned
        except Exception as exc:
            log.warning("could not check for expired leases or prune: %s", exc)
            return None
        if prune:
            self.next_prune = at + (0.0 if pruned.more else PRUNE_EVERY_S)
            self._pruned(pruned, time.monotonic() - chunk_at)
            with self._lock:
                done, self._unlogged = self._unlogged, Pruned()
            if any(done.kinds().values()):
                kinds = ", ".join(f"{n} {kind}" for kind, n in done.kinds().items() if n)
                log.info("retention: pruned %s", kinds)
        return swept.next_lapse_in

    def stop(self) -> None:
        """The worker is going: no further catch-up chunk starts."""
        self._stopped.set()

    def catching_up(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _pruned(self, pruned: Pruned, chunk_s: float) -> None:
        with self._lock:
            self.behind = pruned.more
            self.next_chunk = time.monotonic() + pause_after(chunk_s)
            self._unlogged = replace(self._unlogged + pruned, more=False)
            if not self.behind or self._stopped.is_set() or self.catching_up():
                return
            self._thread = threading.Thread(target=self._catch_up, name="tenure-prune", daemon=True)
            self._thread.start()

    def _catch_up(self) -> None:
        while self.behind and not self._stopped.wait(max(0.0, self.next_chunk - time.monotonic())):
            started = time.monotonic()
            try:
                pruned = self.store.sweep(rescue=False, limit=self.chunk).pruned
            except Exception as exc:
                log.warning("could not prune: %s", exc)
                self.behind = False  # the next tick tries again
                return
            with self._lock:
                self.behind = pruned.more
                self.next_chunk = time.monotonic() + pause_after(time.monotonic() - started)
                self._unlogged = replace(self._unlogged + pruned, more=False)


def log_rescued(rescued: Sequence[Rescued]) -> None:
    for r in rescued:
        log.warning(
            "job %s attempt %d crashed (lease expired with no result): %s",
            r.job_id,
            r.attempt,
            r.result.reason or r.result.state,
            extra={"job_id": r.job_id, "attempt": r.attempt, "outcome": "crashed"},
        )

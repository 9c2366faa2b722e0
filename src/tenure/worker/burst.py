"""When a `--burst` worker may exit, and what it leaves behind.

Empty queues are not the end of the work: a dead worker's job stays `running` until its lease
expires, and then it is the burst worker's to rescue and run. So a burst worker waits for
running jobs whose leases stop being renewed (at most until those leases expire), and for
scheduled jobs due within that same horizon (a retry with a short backoff; a job an overlap key
or a rate limit deferred by a second: the queue's own work, held back a moment), but not for
jobs a live worker holds (their leases move) nor for jobs due later, which it names when it
exits. A job that is ready when it looks (not parked on a concurrency key, in a queue not
paused) sends it back to reserve: its run_at passed since the reserve that found nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from tenure.core.records import JobRecord
from tenure.core.words import clock_text
from tenure.stores.base import Store

log = logging.getLogger("tenure.worker")

LIST_LIMIT = 10_000


@dataclass(frozen=True)
class Leftover:
    retries: int  # scheduled after a failed attempt
    delayed: int  # scheduled by the caller (delay=...)
    next_due_at: float | None  # store clock
    running_elsewhere: int
    now: float
    paused_ready: dict[str, int] = field(default_factory=dict)  # ready, in paused queues
    ready: int = 0  # ready to run now in the worker's queues (not parked, not paused)

    def describe(self) -> str:
        scheduled = self.retries + self.delayed
        parts = []
        if scheduled:
            retries = f"{self.retries} {'retry' if self.retries == 1 else 'retries'}"
            delayed = f"{self.delayed} delayed"
            kinds = ", ".join(
                text for n, text in ((self.retries, retries), (self.delayed, delayed)) if n
            )
            due = ""
            if self.next_due_at is not None:
                wait = max(0.0, self.next_due_at - self.now)
                due = f", the next due in {wait:.0f} s at {clock_text(self.next_due_at)}"
            parts.append(f"{scheduled} scheduled ({kinds}{due})")
        if self.running_elsewhere:
            parts.append(f"{self.running_elsewhere} running on other live workers")
        for queue, n in sorted(self.paused_ready.items()):
            parts.append(f"{n} ready in paused queue {queue!r} (`tenure queue resume {queue}`)")
        if not parts:
            return "nothing is scheduled or running"
        return "left: " + "; ".join(parts)

    @property
    def empty(self) -> bool:
        return not (
            self.retries
            or self.delayed
            or self.running_elsewhere
            or self.paused_ready
            or self.ready
        )


class BurstEnd:
    """Tracks, across idle ticks, the running jobs a burst worker is waiting for."""

    def __init__(self, store: Store, queues: Sequence[str], slack: float) -> None:
        self.store = store
        self.queues = tuple(queues)
        self.slack = slack  # time after a lease expired for the rescue to take it
        self._first_lease: dict[str, float | None] = {}
        self._alive: set[str] = set()
        self._told: set[str] = set()
        self._told_due: set[float] = set()

    def done(self) -> bool:
        """The queues are empty: True (exit, having said what is left), unless a running
        job's lease is going unrenewed (its worker may be dead: the job is this worker's to
        rescue and run once the lease expires)."""
        try:
            now = self.store.now()
            waiting = self.waiting_for(now)
            if waiting:
                self._say_waiting(waiting, now)
                return False
            left = self.leftover(now)
        except Exception as exc:  # an outage now: the fetch loop backs off and looks again
            log.warning("--burst: cannot read what is left (%s: %s)", type(exc).__name__, exc)
            return False
        if left.ready:
            # Due since the reserve that found nothing (a deferral's or a retry's run_at passed
            # in between, e.g. an overlap key's 0.02 s): reserve again, do not exit. Every
            # burst worker idle in that moment would otherwise exit, and leave the job queued.
            log.debug("--burst: %d job(s) came due since the last reserve", left.ready)
            return False
        if left.next_due_at is not None and left.next_due_at - now <= self.slack:
            self._say_due_soon(left, now)
            return False
        (log.info if left.empty else log.warning)(
            "--burst: the queues are empty; %s", left.describe()
        )
        return True

    def _say_waiting(self, waiting: list[JobRecord], now: float) -> None:
        ids = {job.id for job in waiting}
        if ids <= self._told:
            return
        self._told |= ids
        expires = max((job.lease_expires_at or now) for job in waiting)
        log.info(
            "--burst: the queues are empty; waiting up to %.0f s for %d running job(s) (%s): "
            "if their worker renews the lease, it is alive and this worker exits; if the lease "
            "expires, their worker is dead and this worker runs them",
            max(0.0, expires - now),
            len(waiting),
            ", ".join(sorted(ids)),
        )

    def _say_due_soon(self, left: Leftover, now: float) -> None:
        assert left.next_due_at is not None
        if left.next_due_at in self._told_due:
            return
        self._told_due.add(left.next_due_at)
        log.info(
            "--burst: the queues are empty; waiting %.1f s for a scheduled job due at %s",
            max(0.0, left.next_due_at - now),
            clock_text(left.next_due_at),
        )

    def _running(self) -> list[JobRecord]:
        return [
            job
            for queue in self.queues
            for job in self.store.list_jobs(state="running", queue=queue, limit=LIST_LIMIT)
        ]

    def waiting_for(self, now: float) -> list[JobRecord]:
        """Running jobs whose lease has not moved since first seen and has not long expired:
        their worker may be dead, and the job this worker's to run once the lease expires."""
        waiting = []
        for job in self._running():
            if job.id in self._alive:
                continue
            first = self._first_lease.setdefault(job.id, job.lease_expires_at)
            if job.lease_expires_at != first:  # renewed: a live worker holds it
                self._alive.add(job.id)
                continue
            if first is not None and now > first + self.slack:
                continue  # expired and still not rescued: not worth waiting on any longer
            waiting.append(job)
        return waiting

    def leftover(self, now: float) -> Leftover:
        retries = delayed = 0
        next_due: float | None = None
        by_queue = self.store.queue_counts()
        paused = {
            q: by_queue[q]["queued"]
            for q in self.queues
            if q in by_queue and by_queue[q].paused and by_queue[q]["queued"]
        }
        ready = sum(
            max(0, by_queue[q]["queued"] - by_queue[q].waiting)
            for q in self.queues
            if q in by_queue and not by_queue[q].paused
        )
        for queue in self.queues:
            scheduled = by_queue[queue]["scheduled"] if queue in by_queue else 0
            if not scheduled:
                continue
            for job in self.store.list_jobs(
                state="scheduled", queue=queue, limit=min(scheduled, LIST_LIMIT)
            ):
                if job.tries_used:
                    retries += 1
                else:
                    delayed += 1
                next_due = job.run_at if next_due is None else min(next_due, job.run_at)
        running = len(self._running())
        return Leftover(retries, delayed, next_due, running, now, paused, ready)

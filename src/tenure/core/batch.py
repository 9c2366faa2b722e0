"""Batch rules, pure: what happens to a batch when one of its jobs ends, is cancelled or is
added, and how far along it is. Every store applies these inside the transaction that changed
the job, so a batch's callbacks are enqueued exactly once and its counts are never torn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
BATCH_STATES = (RUNNING, SUCCEEDED, FAILED, CANCELLED)


@dataclass(frozen=True)
class BatchCounts:
    """The part of a batch row that its rules read and write."""

    state: str = RUNNING
    jobs: int = 0  # members added so far
    done: int = 0  # members that succeeded
    failed: int = 0  # members that failed for good
    cancelled: int = 0  # members that never ran because the batch stopped
    allow_failures: bool = False
    catch_sent: bool = False
    finished: bool = False  # every member settled and the last callbacks were enqueued

    @property
    def outstanding(self) -> int:
        return self.jobs - self.done - self.failed - self.cancelled

    @property
    def stops_new_work(self) -> bool:
        """Queued members of a cancelled or failed batch are never started."""
        return self.state in (CANCELLED, FAILED)


@dataclass(frozen=True)
class BatchChange:
    counts: BatchCounts
    callbacks: tuple[str, ...] = ()  # of "then", "catch", "finally", in order
    cancel_queued: bool = False  # cancel the members still waiting to run


def member_ended(counts: BatchCounts, outcome: str) -> BatchChange:
    """A member reached a final state: succeeded, failed (no retry left) or cancelled."""
    if outcome == SUCCEEDED:
        counts = replace(counts, done=counts.done + 1)
    elif outcome == CANCELLED:
        counts = replace(counts, cancelled=counts.cancelled + 1)
    else:
        counts = replace(counts, failed=counts.failed + 1)
    callbacks: list[str] = []
    cancel_queued = False
    if outcome == FAILED and not counts.catch_sent:
        callbacks.append("catch")  # on the first failure, whatever happens next
        counts = replace(counts, catch_sent=True)
        if not counts.allow_failures and counts.state == RUNNING:
            # The batch can no longer succeed: do not spend work on the rest.
            counts = replace(counts, state=FAILED)
            cancel_queued = True
    change = settle(counts)
    return BatchChange(change.counts, (*callbacks, *change.callbacks), cancel_queued)


def member_retried(counts: BatchCounts) -> BatchCounts | None:
    """A failed member is retried by hand: it goes back to the batch's pending work (no longer
    counted as failed, so its next end is counted once), but only while the batch runs.

    A batch that has failed, was cancelled or has settled already acted on its end: its queued
    members were cancelled, its catch/then/finally enqueued. Retrying one member cannot take
    those back, so None: refuse, and the member stays failed. `catch` stays sent: it runs on the
    first failure, whatever happens next, so a retried member that fails again sends none.
    """
    if counts.state != RUNNING or counts.finished:
        return None
    # max(): a member its batch never counted as failed (a torn counter) is simply not counted
    return replace(counts, failed=max(0, counts.failed - 1))


def cancelled_by_user(counts: BatchCounts) -> BatchChange:
    if counts.state != RUNNING:
        return BatchChange(counts)
    return BatchChange(replace(counts, state=CANCELLED), cancel_queued=True)


def queued_members_cancelled(counts: BatchCounts, n: int) -> BatchChange:
    return settle(replace(counts, cancelled=counts.cancelled + n))


def settle(counts: BatchCounts) -> BatchChange:
    """When nothing is outstanding, the batch finishes: then (if it may), finally, once."""
    if counts.finished or counts.outstanding > 0:
        return BatchChange(counts)
    callbacks: list[str] = []
    state = counts.state
    if state == RUNNING:
        state = SUCCEEDED if counts.failed == 0 or counts.allow_failures else FAILED
        if state == SUCCEEDED:
            callbacks.append("then")
    callbacks.append("finally")
    return BatchChange(replace(counts, state=state, finished=True), tuple(callbacks))


def progress(counts: BatchCounts, declared_total: int | None, partial: float) -> float:
    """Share of the work done, 0..1.

    With a declared total, progress is measured against it, so it never goes backwards while a
    coordinator keeps adding slices; `partial` is the sum of the fractions that running members
    reported (each in 0..1, kept across retries, replaced by a whole 1 when the member settles).
    Without one, it is the share of members settled so far.
    """
    if counts.finished and counts.state == SUCCEEDED:
        return 1.0
    denominator = counts.jobs
    if declared_total is not None and declared_total >= counts.jobs:
        denominator = declared_total
    if denominator <= 0:
        return 0.0
    settled = counts.done + counts.failed + counts.cancelled
    return max(0.0, min(1.0, (settled + partial) / denominator))


def ranges(lo: int, hi: int, size: int) -> Iterator[tuple[int, int]]:
    """Inclusive id ranges of at most `size` ids.

    list(ranges(1, 120, 50)) == [(1, 50), (51, 100), (101, 120)]
    """
    if size < 1:
        raise ValueError(f"size: expected an int >= 1, got {size!r}")
    start = lo
    while start <= hi:
        end = min(hi, start + size - 1)
        yield (start, end)
        start = end + 1


def count_ranges(lo: int, hi: int, size: int) -> int:
    return 0 if hi < lo else (hi - lo) // size + 1

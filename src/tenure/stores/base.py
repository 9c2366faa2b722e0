"""The store interface: one narrow seam, named in job verbs, that every backend implements.

Plain dataclasses in and out (core/records.py); no SQL or Redis types cross it. Times are
epoch seconds measured on the *store's* clock (`Store.now()`), never a worker's, so that a
worker with a skewed clock can neither expire a lease early nor keep one late.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from tenure.core.records import (
    BatchRecord,
    CancelResult,
    Ending,
    EndResult,
    HeartbeatReply,
    JobRecord,
    NewBatch,
    NewJob,
    PeriodicClaim,
    PeriodicRecord,
    QueueCounts,
    Reservation,
    Swept,
    WorkerRecord,
    WorkerRef,
)
from tenure.core.states import JOB_STATES


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the contract every store keeps. Callers (App, the worker,
    the conformance suite) read these instead of guessing from the URL's scheme."""

    name: str  # for people: "SQLite", "PostgreSQL", "Redis"
    # job_transaction(): a running job's own writes commit together with its success
    job_transactions: bool
    # enqueue_many(conn=): jobs (and batches) written inside the application's transaction
    enqueue_in_caller_transaction: bool
    # several job transactions open at once, and rescue working meanwhile (not one writer)
    concurrent_job_transactions: bool
    # wake-ups travel with the transaction that wrote the jobs (PostgreSQL's NOTIFY)
    listen_notify: bool
    # workers on several hosts may share the store (SQLite: one host, one file)
    many_hosts: bool
    # a batch's members and callbacks may use different queues (Redis Cluster: one slot, so
    # one queue per batch; enqueue_many(batch=/into_batch=) refuses others with a ConfigError)
    batches_span_queues: bool = True


class JobTransaction(Protocol):
    """A running job's own writes and its completion, committed together or not at all."""

    connection: Any  # the backend's DB-API connection, inside the open transaction

    def complete(self, result: str | None = None) -> EndResult:
        """Write the job's success (and its stored `result`) in this transaction and commit;
        refused (and rolled back, job writes included) when the attempt no longer holds its
        lease."""

    def rollback(self) -> None: ...


class Store(Protocol):
    """What every backend provides. Each method is atomic on its own."""

    url: str
    capabilities: ClassVar[Capabilities]

    def __init__(self, url: str) -> None:
        """Every store is opened from its URL alone."""

    def now(self) -> float:
        """The store's clock, epoch seconds: the only clock leases and schedules use."""

    def migrate(self) -> None:
        """Create or upgrade the schema; idempotent and safe when processes race."""

    def close(self) -> None: ...

    # -- jobs through their life -------------------------------------------------------
    def enqueue_many(
        self,
        jobs: Sequence[NewJob],
        *,
        conn: Any = None,
        batch: NewBatch | None = None,
        into_batch: str | None = None,
    ) -> list[str]:
        """Store new jobs in one round trip and return their ids, in order.

        With `conn` (the application's own database connection, where the backend allows it)
        the jobs are written inside the application's transaction: its rollback leaves none.

        A job whose id already exists is skipped. A job whose unique key is held (see
        Guards) is not stored: the id of the job holding the key is returned in its place.

        `batch` creates that batch with `jobs` as its first members in one transaction (an
        empty one settles at once: then/finally still run once). `into_batch` adds `jobs` to
        that batch, skipping ids already present (a re-run coordinator adds nothing twice),
        and adds none once the batch no longer takes work. Members take no unique keys. With
        either, the ids returned are those of the members this call added, in order.
        """

    def reserve(
        self, *, queues: Sequence[str], worker: WorkerRef, lease: float, limit: int = 1
    ) -> list[Reservation]:
        """Claim up to `limit` ready jobs, earlier queues first, opening an attempt for each.

        A ready job whose overlap key is held by a running job with a live lease, or whose rate
        limit is reached, is deferred instead: its run_at moves on, a `deferred` attempt records
        why, and no try is used. A paused queue (`set_control`) hands out nothing: the check is
        part of the claim itself, so no worker anywhere reserves from it once the pause returned.
        """

    def heartbeat(
        self,
        *,
        worker: WorkerRef | WorkerRecord,
        leases: Sequence[tuple[str, int]] = (),
        lease: float = 0.0,
        memory: Mapping[str, float] | None = None,
    ) -> HeartbeatReply:
        """The worker's report to the store, stamped by the store's clock: mark the worker
        seen and renew the leases (job_id, token) it holds; say which of them were lost, which
        were cancelled (`cancel`), and when `tenure restart` was last asked for. `memory`
        (job id to MB) is each renewed attempt's last memory reading, kept on the attempt
        (`AttemptRecord.memory_mb`): the evidence a rescue records when the worker vanishes.

        With a WorkerRecord, the worker's row is written first (the record's times are not
        read): the worker starting (its host, pid, queues and concurrency; an id that stopped
        starts again), or, with `record.stopped_at` set to any time, stopping (for an id never
        registered, nothing). The only write to a worker's row: its start, life and end are
        one verb."""

    def end_attempt(
        self,
        ending: Ending,
        *,
        queues: Sequence[str] = (),
        worker: WorkerRef | None = None,
        lease: float = 0.0,
    ) -> tuple[EndResult, Reservation | None]:
        """End a running attempt, however it ended, and with `queues` and `worker` claim the
        same slot's next job in the same round trip where the backend allows (one transaction
        on SQL, one script on Redis): the one verb for an attempt's end, the worker's hot path.

        `ending` (tenure.core.records.Ending) names the attempt (`job_id`, `token`) and how it
        ended. `outcome` "succeeded" records a success, with `result`
        (tenure.core.results.encode's text; None stores nothing) written in the same
        transaction or script, and only when the token still holds the lease: never a success
        without its result, never the result of a stale attempt. Any other outcome ends the
        attempt without success (`error`, default the outcome, and `traceback` kept with it,
        with its `cause`) and the store decides retry or fail; `permanent` fails it without a
        retry; `snooze` (outcome "deferred": the job put itself off) queues it again that many
        seconds later, no try used. `record` False (an
        end its worker already recorded once: a rolling deploy's repeated hand-back) leaves
        no attempt in the job's history: the job is decided as for `outcome`, only the
        history does not grow (unless it was cancelled meanwhile). A job cancelled
        while it ran ends `cancelled` however the attempt ended: no try used, no retry (a
        sweep that rescues it does the same). A token that no longer holds the lease is
        refused and nothing is written.

        The next attempt opens now, when its slot is free, as `reserve(limit=1)` would open
        it (a paused queue gives none); without `queues` and `worker` the next job is None.
        The store may return no job even though some are ready (e.g. a guarded job it judges
        only in `reserve`); the worker then reserves the usual way.
        """

    def job_transaction(self, *, job_id: str, token: int) -> JobTransaction:
        """Open a transaction for a running attempt's own writes (SQL backends only)."""

    def claim_once(self, *, job_id: str, token: int, key: str) -> bool:
        """Record the effect `key` of this job before it happens; True only for the first
        claim of a job and key, and only while `token` holds the lease."""

    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        """Cancel one job, or (`batch_id=`) a batch; exactly one of the two.

        A job queued or scheduled becomes `cancelled` at once and never runs; a running one
        keeps running until the worker holding it learns of the cancel from its next heartbeat
        and stops it. A batch that runs is cancelled: its queued members are cancelled, its
        running ones see it (`ctx.batch.cancelled`). A finished job, a batch no longer running,
        or an unknown id: refused, nothing changes. A batch member cancelled on its own counts
        as a cancelled member of its batch."""

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept:
        """The workers' maintenance tick, leaderless: whoever calls it first does the work, and
        two calls at once never act on the same row.

        `rescue`: close attempts whose lease expired with no end (outcome crashed) and decide.
        `prune`: delete up to `limit` finished jobs (with their attempts, effects and guard
        rows), as many settled batches and as many expired guard rows, each past its age on
        the store's clock (tenure.core.retention): never a live job, a member of a batch that has
        not settled, or the latest run of a periodic job. `Pruned.more` says a chunk was full.
        `dry_run`: change nothing, and count everything prunable now, whatever `limit`.
        """

    def wait_for_work(
        self, *, queues: Sequence[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        """Block up to `timeout` s, returning early when new work may be ready in `queues`,
        or when one of the jobs `ended` may have ended (JobHandle.wait).

        A hint, not a promise: callers always reserve (or read the job) afterwards. Backends
        wake on their own signal (SQLite: data_version; PostgreSQL: LISTEN/NOTIFY; Redis: a
        blocking pop). A job's end wakes only waiters that said so here first: such a call
        may register the wait and return at once, for the caller to read the job again before
        it sleeps (an end between that read and the registration would wake nobody). The
        success and failure paths wake them in the transaction/script that records the end.
        """

    # -- batches -----------------------------------------------------------------------
    def list_batches(
        self, *, ids: Sequence[str] | None = None, limit: int = 50
    ) -> list[BatchRecord]:
        """The newest `limit` batches, newest first; with `ids`, those of them that exist, in
        that order (`limit` aside). One batch: `get_batch(store, id)`."""

    def report_progress(self, *, job_id: str, token: int, fraction: float) -> None:
        """A running member's own progress, 0..1; kept as the highest value reported."""

    # -- periodic jobs -----------------------------------------------------------------
    def claim_periodic(
        self, *, name: str, queue: str, due: float, job: NewJob | None
    ) -> PeriodicClaim:
        """Claim the due time `due` of the periodic job `name`, atomically (one transaction,
        one script): every worker of every host calls this, and each due time is dispatched
        once. The periodic state lives in `queue`'s part of the store (its Redis slot).

        - no state yet: `due` is recorded, nothing dispatched (a newly deployed periodic job
          starts at its next due time, not with a back-filled run): "recorded";
        - a stored due time at or after `due`: nothing changes (another worker got it):
          "taken";
        - else `due` is recorded and `job` enqueued with it: "dispatched"; with `job` None
          the state moves on without a dispatch (a run skipped on purpose): "recorded".

        `job`'s id should be made from name and due, so a retried call cannot create it twice.
        """

    def list_periodic(self) -> list[PeriodicRecord]:
        """Every periodic job's stored state, by name."""

    # -- reading and operating ---------------------------------------------------------
    def list_jobs(
        self,
        *,
        ids: Sequence[str] | None = None,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        batch_id: str | None = None,
    ) -> list[JobRecord]:
        """Newest first, without attempts, optionally of one `state`, `queue` and batch
        (`batch_id`: that batch's members, settled or not, until retention prunes the batch).

        With `ids`: those jobs that exist, in that order, each with its attempts and effects,
        read in one snapshot with them (`state`, `queue` and `limit` aside). One job:
        `get_job(store, id)`."""

    def queue_counts(self, *, keys: bool = False) -> dict[str, QueueCounts]:
        """Jobs per queue, then per state (every state present), for each queue that holds a
        job or is paused, with the age of its oldest ready job and whether it is paused. Read
        from counters or indexes, never by scanning jobs: the dashboard asks on every refresh,
        with millions of finished jobs in the store. A job parked by its concurrency key
        counts as queued, and in `waiting`; `keys=True` adds each concurrency key in use
        (running and waiting under it: the live jobs of those keys are read)."""

    def retry_job(self, job_id: str) -> bool:
        """Put a failed job back in its queue with fresh tries; False if it is not failed.

        A failed batch member goes back to its batch's pending work (its failed count drops)
        only while the batch is running; once the batch has failed, been cancelled or settled,
        its callbacks have run or its queued members were cancelled, so retrying one member
        cannot undo that: False, and the job stays failed (`App.retry_refusal` says why)."""

    def forget_job(self, job_id: str) -> bool:
        """Delete a finished job and its attempts; False if absent or still live."""

    # -- workers -----------------------------------------------------------------------
    def list_workers(self) -> list[WorkerRecord]: ...

    # -- operators' switches -----------------------------------------------------------
    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        """What operators switch for every worker, held in the store so it reaches every host
        and survives restarts; returns the store's time of the change.

        `paused` pauses (True) or resumes (False) each queue named: no worker reserves from a
        paused queue, running jobs go on, enqueueing works; a queue that holds no job yet may
        be paused too. `restart` asks every worker started before now to finish its jobs and
        exit (each learns it from its heartbeat's reply). Each switch is atomic on its own."""


def get_job(store: Store, job_id: str) -> JobRecord | None:
    """One job with its attempts and effects, or None: `list_jobs(ids=)` of one id."""
    found = store.list_jobs(ids=[job_id])
    return found[0] if found else None


def get_batch(store: Store, batch_id: str) -> BatchRecord | None:
    """One batch, or None: `list_batches(ids=)` of one id."""
    found = store.list_batches(ids=[batch_id])
    return found[0] if found else None


def total_counts(by_queue: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Jobs per state, every state present, from `queue_counts()`: the totals App and the
    worker's metrics show are one sum over one source, so they never disagree with the
    per-queue numbers, and no store writes a second verb for them."""
    out = dict.fromkeys(JOB_STATES, 0)
    for counts in by_queue.values():
        for state, n in counts.items():
            out[state] += n
    return out


__all__ = ["Capabilities", "JobTransaction", "Store", "get_batch", "get_job", "total_counts"]

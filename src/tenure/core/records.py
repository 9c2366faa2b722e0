"""What crosses the store seam: plain dataclasses in and out (jobs, attempts, batches, workers,
what an end did), and the one rule turning a batch row (or a claimed job's row) into its record.
No SQL or Redis types; their JSON shapes are in `codec`, the words a store writes in `words`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from tenure.core import results
from tenure.core.batch import BatchCounts
from tenure.core.batch import progress as batch_progress
from tenure.core.errors import ConfigError
from tenure.core.guards import NO_GUARDS, Guards
from tenure.core.retention import KEEP_FOREVER, Keep, Pruned
from tenure.core.retry import Policy, parse_policy
from tenure.core.states import FAIR_BEFORE, JOB_STATES


@dataclass(frozen=True)
class NewJob:
    id: str
    name: str
    queue: str
    payload: str
    policy: Policy
    delay: float = 0.0  # seconds after the store's now
    batch_id: str | None = None
    guards: Guards = NO_GUARDS
    keep: Keep = KEEP_FOREVER  # how long it is kept once finished (App: keep_succeeded=...)
    priority: int = 0  # lower runs first within its queue; FIFO within a priority
    # a chain link's chain (tenure.core.chains: the later links, catch, finally) as JSON text; the
    # store follows it in the transaction/script that ends this job
    chain: str | None = None


@dataclass(frozen=True)
class WorkerRef:
    """Who holds a lease: written on every attempt so a person can find the process."""

    id: str
    host: str
    pid: int


@dataclass(frozen=True)
class Reservation:
    """A job handed to a worker. `token` fences the lease: only its holder may end the attempt."""

    job_id: str
    name: str
    queue: str
    payload: str
    policy: Policy
    attempt: int
    token: int
    lease_expires_at: float
    batch_id: str | None = None


_NEW = object.__new__


def quick_reservation(
    job_id: str,
    name: str,
    queue: str,
    payload: str,
    policy: Policy,
    attempt: int,
    token: int,
    lease_expires_at: float,
    batch_id: str | None = None,
) -> Reservation:
    """Reservation(...), for a store's claim on the worker's hot path: the fields written
    straight into the new record, without the object.__setattr__ per field that a frozen
    dataclass's __init__ pays (half of its cost, one record a job). Reservation has no
    __post_init__ to skip; tests/unit/test_quick_records.py holds the two equal."""
    res = _NEW(Reservation)
    res.__dict__.update(
        job_id=job_id,
        name=name,
        queue=queue,
        payload=payload,
        policy=policy,
        attempt=attempt,
        token=token,
        lease_expires_at=lease_expires_at,
        batch_id=batch_id,
    )
    return res


@dataclass(frozen=True)
class AttemptRecord:
    job_id: str
    number: int
    worker_id: str
    host: str
    pid: int
    started_at: float
    ended_at: float | None
    outcome: str | None  # None while running
    error: str | None
    traceback: str | None
    last_heartbeat_at: float | None
    cause: str | None = None  # who ended its process (tenure.core.causes); None: not recorded
    memory_mb: float | None = None  # its last memory reading, reported with a heartbeat

    @property
    def worker(self) -> str:
        return self.worker_id


@dataclass(frozen=True)
class EffectRecord:
    """An effect `once(key)` recorded, and the attempt that claimed it."""

    key: str
    attempt: int
    at: float


@dataclass(frozen=True)
class JobRecord:
    id: str
    name: str
    queue: str
    payload: str
    state: str  # as shown: queued | scheduled | running | succeeded | failed | cancelled
    policy: Policy
    created_at: float
    run_at: float
    finished_at: float | None
    tries_used: int
    exceptions: int
    last_error: str | None
    lease_expires_at: float | None
    worker_id: str | None
    batch_id: str | None
    attempts: list[AttemptRecord] = field(default_factory=list)
    effects: list[EffectRecord] = field(default_factory=list)
    # the stored text of a succeeded job's JSON return value (sealed when encrypted); None
    # when it returned None, or has not succeeded
    result_text: str | None = None
    priority: int = 0
    chain_text: str | None = None  # a chain link's chain (tenure.core.chains.info reads it)
    waiting_on: str | None = None  # a parked job's concurrency key (states.PARKED_AT)

    @property
    def result(self) -> Any:
        """The job's return value, as JSON brought it back (decrypted when sealed)."""
        return results.decode(self.result_text)


class Ending(NamedTuple):
    """A running attempt's end, as its worker hands it to Store.end_attempt (whose docstring
    says what each field does): which attempt (`job_id`, `token`), how it ended, and what to
    keep of it. A NamedTuple, as the worker's messages are: one is made per job on the hot
    path, where a frozen dataclass's __init__ costs five times as much."""

    job_id: str
    token: int
    outcome: str = "succeeded"
    result: str | None = None  # a success's stored result (tenure.core.results.encode)
    error: str | None = None  # None: the outcome's own word is recorded
    traceback: str | None = None
    permanent: bool = False  # failed without a retry
    cause: str | None = None  # who ended the attempt's process (tenure.core.causes)
    snooze: float = 0.0  # "deferred": queued again this many seconds later, no try used
    record: bool = True  # False: its worker recorded this end once already; no attempt row

    @property
    def error_text(self) -> str:
        """The error an unsuccessful end records: `error`, else the outcome itself."""
        return self.error or self.outcome


@dataclass(frozen=True)
class EndResult:
    """What the store did with an attempt's end."""

    accepted: bool  # False: the token was stale (lease taken over); nothing changed but a note
    state: str  # the job's state afterwards, or "missing" when no such job exists
    reason: str = ""
    retry_in: float | None = None


@dataclass(frozen=True)
class Rescued:
    job_id: str
    attempt: int
    result: EndResult


@dataclass(frozen=True)
class Swept:
    """What one `Store.sweep` did: the expired attempts it rescued, the rows it pruned, and
    (when it rescued) in how many seconds the earliest lease still running ends, on the
    store's clock: None when nothing runs. A worker sweeps again then, so a crashed holder's
    attempt is rescued, and the jobs parked behind its concurrency slot handed back, as its
    lease lapses rather than up to a sweep interval later."""

    rescued: list[Rescued] = field(default_factory=list)
    pruned: Pruned = field(default_factory=Pruned)
    next_lapse_in: float | None = None


@dataclass(frozen=True)
class HeartbeatReply:
    """What the heartbeat a worker sends every lease/3 tells it back, so that it learns of
    lost leases, cancels and restarts without a call of its own for each."""

    lost: list[str]  # job ids whose lease is gone: stop them, they may run elsewhere
    cancel: list[str]  # job ids it holds that were cancelled: stop them (soft, then kill)
    restart_requested_at: float | None = None  # the latest `tenure restart` (store clock)


@dataclass(frozen=True)
class CancelResult:
    """What `Store.cancel` did with a job."""

    accepted: bool  # False: refused, nothing changed
    # accepted: "cancelled" (it was queued or scheduled and will never run) or "running" (its
    # worker is told at its next heartbeat and stops it); refused: the job's final state
    # (succeeded | failed | cancelled), or "missing" when no job has that id
    state: str


@dataclass(frozen=True)
class KeyCounts:
    """One concurrency key of a queue: attempts running under it, jobs parked waiting on it,
    and its limit (as its jobs carry it)."""

    running: int
    waiting: int
    limit: int


class QueueCounts(dict[str, int]):
    """One queue's jobs per state, every state present (a dict, as it always was), and beside
    them what `tenure queues` shows: how long the oldest ready job has waited, in seconds on
    the store's clock (None: nothing ready), whether the queue is paused, how many of its
    queued jobs wait on a concurrency key (`waiting`), and, when asked for
    (`queue_counts(keys=True)`), each key in use (`by_key`, else None)."""

    def __init__(
        self,
        counts: Mapping[str, int] | None = None,
        *,
        oldest_ready_age: float | None = None,
        paused: bool = False,
        waiting: int = 0,
        by_key: dict[str, KeyCounts] | None = None,
    ) -> None:
        super().__init__(dict.fromkeys(JOB_STATES, 0))
        if counts:
            self.update(counts)
        self.oldest_ready_age = oldest_ready_age
        self.paused = paused
        self.waiting = waiting
        self.by_key = by_key

    def __repr__(self) -> str:
        return (
            f"QueueCounts({dict(self)!r}, oldest_ready_age={self.oldest_ready_age!r}, "
            f"paused={self.paused!r})"
        )


def cancel_target(job_id: str | None, batch_id: str | None) -> tuple[str, str]:
    """("job", id) or ("batch", id): what `Store.cancel` was asked to cancel."""
    if (job_id is None) == (batch_id is None):
        raise ConfigError(
            f"cancel: expected a job_id or a batch_id (one), got job_id={job_id!r}, "
            f"batch_id={batch_id!r}"
        )
    return ("job", job_id) if job_id is not None else ("batch", str(batch_id))


def ready_age(now: float, oldest_run_at: float | None) -> float | None:
    """How long the oldest ready job has waited: from its run_at (when it became ready) to
    the store's now; None when the oldest queued job is not due yet, or there is none."""
    if oldest_run_at is None or oldest_run_at > now or oldest_run_at < FAIR_BEFORE:
        return None  # a fair job's run_at is its virtual start, not when it became ready
    return now - oldest_run_at


@dataclass(frozen=True)
class NewBatch:
    """A batch to create. Callbacks are jobs written down now and enqueued, exactly once each,
    by the store when the batch reaches the moment they are for."""

    id: str
    name: str
    total: int | None = None  # declared total: progress is measured against it
    allow_failures: bool = False
    then: NewJob | None = None
    catch: NewJob | None = None
    finally_: NewJob | None = None
    keep: Keep = KEEP_FOREVER  # how long it is kept once settled


@dataclass(frozen=True)
class BatchRecord:
    id: str
    name: str
    state: str  # running | succeeded | failed | cancelled
    total: int  # the declared total, else the members added so far
    jobs: int
    done: int
    failed: int
    cancelled: int
    pending: int  # total - done - failed - cancelled (never below 0)
    progress: float  # 0..1, monotonic while jobs <= a declared total
    allow_failures: bool
    created_at: float
    finished_at: float | None
    then_job_id: str | None
    catch_job_id: str | None
    finally_job_id: str | None
    declared_total: int | None = None


# What claim_periodic did with a due time (see Store.claim_periodic).
PeriodicClaim = Literal["dispatched", "recorded", "taken"]


@dataclass(frozen=True)
class PeriodicRecord:
    """What the store holds of one periodic job: the latest due time claimed (dispatched, or
    only recorded), and the job dispatched for the latest run (None before the first)."""

    name: str
    last_due: float
    last_job_id: str | None


# A worker renews its record every lease/3 (10 s by default): one not seen for a minute died
# without saying so (SIGKILL, host lost, frozen), it is not merely slow.
WORKER_SILENT_AFTER_S = 60.0


@dataclass(frozen=True)
class WorkerRecord:
    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    started_at: float
    last_seen_at: float
    stopped_at: float | None = None
    # when it began stopping (its first SIGTERM), while attempts still ran; heartbeat() with a
    # record whose stopping_at is set (any value) stamps it with the store's now
    stopping_at: float | None = None
    # the job names the worker's code defines (rolling deploys: `tenure queues` counts the
    # ready jobs no live worker knows); None: not reported (a worker from before this field)
    known: tuple[str, ...] | None = None

    def is_live(self, now: float) -> bool:
        """Not stopped and seen within WORKER_SILENT_AFTER_S of `now` (the store's clock): the
        one rule for the CLI, the dashboard, `App.live_workers` and rolling-deploy hand-backs."""
        return self.stopped_at is None and now - self.last_seen_at < WORKER_SILENT_AFTER_S


def batch_target(batch: NewBatch | None, into_batch: str | None) -> NewBatch | str | None:
    """Which batch form of `enqueue_many` a call asks for: a batch to create (NewBatch), the id
    of one to add to, or None for plain jobs. Both at once is a caller's mistake."""
    if batch is not None and into_batch is not None:
        raise ValueError("enqueue_many: batch= creates a batch, into_batch= adds to one; not both")
    return batch if batch is not None else into_batch


def batch_record(
    row: Any, counts: BatchCounts, declared: int | None, partial: float
) -> BatchRecord:
    """A batch as every backend shows it, from its stored row (id, name, created_at,
    finished_at and the callback job ids) and its counts: one rule for total and progress."""
    total = declared if declared is not None and declared >= counts.jobs else counts.jobs
    settled = counts.done + counts.failed + counts.cancelled
    return BatchRecord(
        id=row["id"],
        name=row["name"],
        state=counts.state,
        total=total,
        jobs=counts.jobs,
        done=counts.done,
        failed=counts.failed,
        cancelled=counts.cancelled,
        pending=max(0, total - settled),
        progress=batch_progress(counts, declared, partial),
        allow_failures=counts.allow_failures,
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        then_job_id=row["then_job_id"],
        catch_job_id=row["catch_job_id"],
        finally_job_id=row["finally_job_id"],
        declared_total=declared,
    )


def reservation(row: Any) -> Reservation:
    """A SQL store's row of a job just claimed (id, name, queue, payload, policy, attempt,
    lease_expires_at, batch_id): its attempt number is its fencing token. Here, not in sql/, so
    that a job's walk meets no module more than the records it builds."""
    return Reservation(
        job_id=row["id"],
        name=row["name"],
        queue=row["queue"],
        payload=row["payload"],
        policy=parse_policy(row["policy"]),
        attempt=row["attempt"],
        token=row["attempt"],
        lease_expires_at=row["lease_expires_at"],
        batch_id=row["batch_id"],
    )

"""Operating on jobs and queues for people (the CLI, the dashboard, an operator's script): cancel
one job, pause or resume a queue, how long each queue's jobs wait, and why a retry was refused.
App's methods are thin calls into these; the store does the work atomically."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tenure.core import chains
from tenure.core.errors import CancelRefused, ConfigError, JobNotFound
from tenure.core.records import JobRecord, KeyCounts, QueueCounts
from tenure.core.words import clock_text
from tenure.stores.base import Store, get_batch, get_job

FINISHED = {"succeeded": "succeeded", "failed": "failed", "cancelled": "was cancelled already"}


@dataclass(frozen=True)
class Cancellation:
    """What `App.cancel` did."""

    job_id: str
    # "cancelled": it was queued or scheduled and will never run; "stopping": it is running,
    # and its worker stops it within one heartbeat (lease/3): the cancel signal, then a kill
    # after the job's kill_after
    state: str

    @property
    def message(self) -> str:
        if self.state == "cancelled":
            return f"job {self.job_id} cancelled: it will not run"
        return (
            f"job {self.job_id} is running: its worker stops it at its next heartbeat "
            "(tenure.CancelRequested inside the job, a kill after its kill_after); "
            f"`tenure jobs show {self.job_id}` shows the attempt end `cancelled`"
        )


def cancel(store: Store, job_id: str, where: str) -> Cancellation:
    result = store.cancel(job_id)
    if result.accepted:
        return Cancellation(job_id, "cancelled" if result.state == "cancelled" else "stopping")
    if result.state == "missing":
        raise JobNotFound(f"no job with id {job_id!r} in {where}")
    record = get_job(store, job_id)
    when = f" at {clock_text(record.finished_at)}" if record and record.finished_at else ""
    why = "nothing to do" if result.state == "cancelled" else "a finished job cannot be cancelled"
    raise CancelRefused(f"job {job_id} {FINISHED.get(result.state, result.state)}{when}: {why}")


def cancel_chain(store: Store, link_ids: Sequence[str]) -> Cancellation | None:
    """Cancel a chain: its live link (queued: at once; running: its worker stops it), which
    stops the chain as any cancelled link does (the later links cancelled, catch and finally
    queued). None when the chain had already ended. Links are tried in order: a finished one
    is refused and the next is tried, so a link that succeeds meanwhile hands the cancel on
    to the link its success dispatched."""
    for link_id in link_ids:
        result = store.cancel(link_id)
        if result.accepted:
            state = "cancelled" if result.state == "cancelled" else "stopping"
            return Cancellation(link_id, state)
        if result.state != "succeeded":
            return None  # failed or cancelled: the chain stopped there; missing: damaged
    return None  # every link succeeded


def queue_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"queue: expected a queue name, got {name!r}")
    return name


def pause(store: Store, name: str, *, paused: bool) -> None:
    store.set_control(paused={queue_name(name): paused})


@dataclass(frozen=True)
class QueueWait:
    """One line of `tenure queues`."""

    queue: str
    ready: int
    scheduled: int
    running: int
    paused: bool
    oldest_ready_age: float | None  # seconds, store clock; None when nothing is ready
    waiting: int = 0  # queued, but waiting on a concurrency key (not among `ready`)
    by_key: dict[str, KeyCounts] | None = None  # with keys=True: each concurrency key in use

    def over(self, max_wait: float) -> bool:
        return self.oldest_ready_age is not None and self.oldest_ready_age > max_wait


def queue_waits(by_queue: Mapping[str, QueueCounts]) -> list[QueueWait]:
    return [
        QueueWait(
            queue=name,
            ready=c["queued"] - c.waiting,
            scheduled=c["scheduled"],
            running=c["running"],
            paused=c.paused,
            oldest_ready_age=c.oldest_ready_age,
            waiting=c.waiting,
            by_key=c.by_key,
        )
        for name, c in sorted(by_queue.items())
    ]


def stopped_its_chain(record: JobRecord | None) -> bool:
    """A failed chain link: its failure stopped the chain (in the same store transaction),
    so it is not retried: its success would dispatch nothing."""
    return (
        record is not None
        and record.state == "failed"
        and chains.info(record.chain_text) is not None
    )


def retry_refusal(store: Store, job_id: str, where: str) -> str:
    """Why `App.retry_failed(job_id)` returned False, for a person to read."""
    record = get_job(store, job_id)
    if record is None:
        return f"no job with id {job_id!r} in {where}"
    if record.state != "failed":
        return f"job {job_id} is {record.state}, not failed; only a failed job is retried"
    shown = chains.info(record.chain_text)
    if shown is not None and stopped_its_chain(record):
        return (
            f"job {job_id} is link {shown.position} of {len(shown.links)} of chain {shown.id}, "
            "which stopped when it failed: the later links were cancelled and its catch and "
            "finally queued, and retrying the link cannot undo that, so it stays failed. Start "
            "a new chain (app.chain) for the links that are left"
        )
    batch = get_batch(store, record.batch_id) if record.batch_id else None
    if batch is not None and batch.state != "running":
        happened = {"failed": "failed", "cancelled": "been cancelled"}.get(batch.state, "finished")
        return (
            f"job {job_id} is a member of batch {batch.id} ({batch.name!r}), which has "
            f"{happened}: its callbacks ran and its queued members were settled, and "
            "retrying one member cannot undo that, so the job stays failed. Dispatch it "
            "again on its own, or start a new batch for the work that is left"
        )
    return f"job {job_id} changed while being retried; see `tenure jobs show {job_id}`"


PURGE_PAGE = 500


def waiting_in(store: Store, queue: str) -> int:
    """Jobs of `queue` that wait to run (queued or scheduled): what a purge would cancel."""
    counts = store.queue_counts().get(queue_name(queue))
    return 0 if counts is None else counts["queued"] + counts["scheduled"]


def purge(store: Store, queue: str) -> int:
    """Cancel every job waiting in `queue` (queued or scheduled); running jobs go on, and
    so do later dispatches. Returns how many were cancelled. Each cancel is the store's own
    (a batch counts its member cancelled, a chain link stops its chain)."""
    rounds = waiting_in(store, queue) // PURGE_PAGE + 2  # what waited at the start, no more
    cancelled, seen = 0, set()
    for _ in range(rounds):
        page = [
            job
            for state in ("queued", "scheduled")
            for job in store.list_jobs(state=state, queue=queue, limit=PURGE_PAGE)
            if job.id not in seen
        ]
        if not page:
            break
        for job in page:
            seen.add(job.id)
            result = store.cancel(job.id)
            # a job that started meanwhile ("running") is left to run: it was not waiting
            if result.accepted and result.state == "cancelled":
                cancelled += 1
    return cancelled

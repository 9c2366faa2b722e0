"""Operating on jobs and queues for people (the CLI, the dashboard, an operator's script): cancel
one job, pause or resume a queue, how long each queue's jobs wait, and why a retry was refused.
App's methods are thin calls into these (Operations, App's reading and operating half, at the
end); the store does the work atomically."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tenure import rolling
from tenure.core import chains, retention
from tenure.core.errors import CancelRefused, ConfigError, JobNotFound, StoreMisconfigured
from tenure.core.records import BatchRecord, JobRecord, KeyCounts, QueueCounts, WorkerRecord
from tenure.core.states import JOB_STATES
from tenure.core.urls import redact
from tenure.core.words import clock_text
from tenure.stores import url_options
from tenure.stores.base import Store, get_batch, get_job, total_counts

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


# silent this long: killed or lost for good (it never wrote its stop); listings leave it out
WORKER_GONE_AFTER_S = 3600.0

JobInfo = JobRecord
BatchInfo = BatchRecord


class Operations:
    """App's methods that read the store and operate on it for people: jobs, batches, queues
    and workers listed, a failed job retried, one cancelled, a queue paused or purged."""

    url: str

    @property
    def store(self) -> Store:
        raise NotImplementedError  # App's own: one store per process

    # -- reading and operating ---------------------------------------------------------
    def now(self) -> float:
        """The store's clock (epoch seconds): the one every lease and schedule is measured on."""
        return self.store.now()

    def get_job(self, job_id: str) -> JobInfo:
        """The job: its state, attempts, result and last error; JobNotFound when absent."""
        record = self.find_job(job_id)
        if record is None:
            raise JobNotFound(f"no job with id {job_id!r} in {redact(self.url)}")
        return record

    def find_job(self, job_id: str) -> JobInfo | None:
        """The job, or None when the store has no job with that id."""
        return get_job(self.store, job_id)

    def find_batch(self, batch_id: str) -> BatchInfo | None:
        """The batch, or None when the store has no batch with that id."""
        return get_batch(self.store, batch_id)

    def queue_counts(self) -> dict[str, QueueCounts]:
        """Per queue, the number of jobs in each state (from counters or indexes, not a scan),
        the age of its oldest ready job (`.oldest_ready_age`) and whether it is `.paused`."""
        return self.store.queue_counts()

    def workers(self) -> list[WorkerRecord]:
        """Every worker the store knows of, stopped ones included."""
        return self.store.list_workers()

    def counts(self) -> dict[str, int]:
        """Jobs per state, every state present: the sum of `queue_counts()`."""
        return total_counts(self.store.queue_counts())

    def list_jobs(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        limit: int = 50,
        batch_id: str | None = None,
    ) -> list[JobInfo]:
        """Jobs newest first, optionally of one state and queue, and of one batch (its
        members, until retention prunes the batch)."""
        if state is not None and state not in JOB_STATES:
            raise ConfigError(f"state: expected one of {', '.join(JOB_STATES)}, got {state!r}")
        return self.store.list_jobs(state=state, queue=queue, limit=limit, batch_id=batch_id)

    def list_batches(self, *, limit: int = 50) -> list[BatchInfo]:
        """Recent batches, newest first."""
        return self.store.list_batches(limit=limit)

    def unknown_waiting(self, queues: list[str]) -> list[rolling.Unknown]:
        """Rolling deploys: per queue, the waiting jobs whose name no live worker serving that
        queue knows (a deploy not rolled out yet)."""
        return rolling.unknown_waiting(self.store, self.live_workers(), queues)

    def live_workers(self) -> list[WorkerRecord]:
        """Workers that have not stopped and renewed their record recently."""
        now = self.now()
        return [w for w in self.workers() if w.is_live(now)]

    def request_restart(self) -> float:
        """Every worker finishes its current jobs and exits; returns the request's store time."""
        return self.store.set_control(restart=True)

    def migrate(self) -> None:
        """Create or upgrade the store's schema (every store also does this on first use)."""
        self.store.migrate()

    def store_missing(self) -> str | None:
        """Why this App's store does not exist yet (a SQLite file not there), else None: a
        command that only reads must say so rather than create an empty store and report that
        it is empty."""
        url_options.check(self.url)  # a mistyped ?option first: not "no store at x.db?..."
        if self.url.split(":", 1)[0].lower() != "sqlite":
            return None
        from tenure.stores.sqlite import sqlite_path

        path = sqlite_path(self.url)
        if os.path.exists(path):
            return None
        return f"no SQLite store at {os.path.abspath(path)} ({self.url})"

    def store_refusal(self) -> str | None:
        """Why this App's store cannot be opened for a reason retrying will not fix (a
        malformed URL or option, a missing driver), else None. It opens the store, so a
        SQLite file that must not be created is checked first (store_missing)."""
        try:
            self.store  # noqa: B018 - opening it checks its kind, driver and options
        except (ConfigError, StoreMisconfigured) as exc:
            return str(exc)
        return None

    def describe_store(self) -> str:
        """The store's URL for people and logs, its password masked."""
        return redact(self.url)

    def failed_jobs(self, limit: int = 100) -> list[JobInfo]:
        """Failed jobs, newest first (`tenure failed list`)."""
        return self.store.list_jobs(state="failed", limit=limit)

    def retry_failed(self, job_id: str) -> bool:
        """Put a failed job back in its queue with fresh tries. False when it cannot be:
        `retry_refusal(job_id)` says why."""
        if stopped_its_chain(self.find_job(job_id)):
            return False  # its chain's later links were cancelled with its failure
        return self.store.retry_job(job_id)

    def retry_refusal(self, job_id: str) -> str:
        """Why `retry_failed(job_id)` returned False, for a person to read."""
        return retry_refusal(self.store, job_id, redact(self.url))

    # -- cancelling and pausing (the rules: this module's functions above) ---------------
    def cancel(self, job_id: str) -> Cancellation:
        """Cancel one job: queued or scheduled, it never runs; running, its worker stops it
        (CancelRequested, then a kill after kill_after). Finished: CancelRefused, with why."""
        return cancel(self.store, job_id, redact(self.url))

    def pause_queue(self, name: str) -> None:
        """No worker on any host reserves from queue `name` until `resume_queue(name)`."""
        pause(self.store, name, paused=True)

    def resume_queue(self, name: str) -> None:
        """Let workers reserve from queue `name` again, and wake the idle ones."""
        pause(self.store, name, paused=False)

    def purge(self, queue: str) -> int:
        """Cancel every job waiting in `queue` (queued or scheduled); returns how many."""
        return purge(self.store, queue)

    def waiting_in(self, queue: str) -> int:
        """Jobs of `queue` that wait to run (queued or scheduled): what a purge would cancel."""
        return waiting_in(self.store, queue)

    def queue_waits(self, *, keys: bool = False) -> list[QueueWait]:
        """Per queue: ready, scheduled, running, paused, the oldest ready job's age, jobs
        waiting on a concurrency key (and with `keys`, each key's running and waiting)."""
        return queue_waits(self.store.queue_counts(keys=keys))

    def prune(self, *, dry_run: bool = False) -> retention.Pruned:
        """`tenure prune`: delete what retention says is due now (dry run: count it)."""
        return retention.prune_all(self.store, dry_run=dry_run)

    def forget(self, job_id: str) -> bool:
        """Delete a finished job and its attempts; False if absent or still live."""
        return self.store.forget_job(job_id)

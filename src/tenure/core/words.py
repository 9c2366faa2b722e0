"""The words a store writes into records and logs, the same on every backend: a crash described,
a time shown, a lost callback reported, a job transaction ended by the job itself."""

from __future__ import annotations

import logging
import time

from tenure.core.errors import JobTransactionEnded
from tenure.core.records import AttemptRecord

store_log = logging.getLogger("tenure.store")


def log_lost_callback(batch_id: str, kind: str) -> None:
    """A damaged batch record kept a callback from being enqueued: every store says so this
    way, and the member's own end still commits (failing it would leave the member running
    until its lease expired, again and again)."""
    store_log.error("batch %s: its %s callback is unreadable and was not enqueued", batch_id, kind)


def transaction_ended(job_id: str) -> JobTransactionEnded:
    """What a job transaction's complete() raises when the job ended it itself."""
    return JobTransactionEnded(
        f"job {job_id} committed or rolled back its ctx.transaction() connection itself, so "
        "tenure could not commit its writes together with its success, and part of its work "
        "may already be committed; it was failed without a retry. Do not call commit() or "
        "rollback() on that connection: tenure commits it when the job returns. Fix the job, "
        f"then `tenure failed retry {job_id}`"
    )


def describe_crash(
    attempt: AttemptRecord, lease_expired_at: float, stopping_at: float | None = None
) -> str:
    """The words `tenure jobs show` prints for an attempt whose worker vanished; with
    `stopping_at`, the worker had begun stopping then (a deploy's SIGTERM) and was killed at the
    end of its grace with this attempt still running."""
    seen = attempt.last_heartbeat_at or attempt.started_at
    memory = ""  # the evidence for (or against) an OOM kill, reported with the last heartbeat
    if attempt.memory_mb:
        memory = f"; the attempt's last memory reading was {attempt.memory_mb:.0f} MB"
    if stopping_at is not None:
        return (
            f"killed at the end of a deploy's grace: worker {attempt.worker_id} (pid "
            f"{attempt.pid} on {attempt.host}) received SIGTERM at {clock_text(stopping_at)} and "
            f"was still running this attempt when it died (last heartbeat {clock_text(seen)}, "
            f"lease expired {clock_text(lease_expired_at)}): give the deploy a longer grace "
            f"(stop_grace_period, terminationGracePeriodSeconds) than the job's timeout{memory}"
        )
    return (
        f"worker {attempt.worker_id} (pid {attempt.pid} on {attempt.host}) stopped heartbeating "
        f"at {clock_text(seen)}; its lease expired at {clock_text(lease_expired_at)} with no "
        f"result (killed by signal 9, out of memory, or host lost?){memory}"
    )


def clock_text(epoch: float, *, today: float | None = None) -> str:
    """'14:03:22 UTC' for a time of today (UTC), '2026-11-30 14:03:22 UTC' for any other day:
    a time without its date sends a reader to the wrong day's logs."""
    moment = time.gmtime(epoch)
    current = time.gmtime(time.time() if today is None else today)
    if moment[:3] == current[:3]:
        return time.strftime("%H:%M:%S UTC", moment)
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", moment)

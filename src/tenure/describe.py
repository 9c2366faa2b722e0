"""Jobs and attempts in words a person understands; shared by the CLI and the dashboard."""

from __future__ import annotations

from tenure import payload
from tenure.errors import PayloadError
from tenure.stores.base import AttemptRecord, JobRecord, clock_text

OUTCOME_WORDS = {
    "succeeded": "succeeded",
    "failed": "failed",
    "timed_out": "timed out",
    "crashed": "crashed",
    "interrupted": "was interrupted",
    "lost_lease": "lost its lease",
    "deferred": "was deferred",
    "cancelled": "was cancelled",
}


def describe_attempt(attempt: AttemptRecord) -> str:
    where = f"worker {attempt.worker_id} (pid {attempt.pid} on {attempt.host})"
    if attempt.outcome is None:
        seen = attempt.last_heartbeat_at or attempt.started_at
        return (
            f"attempt {attempt.number} is running on {where} since "
            f"{clock_text(attempt.started_at)}, last heartbeat {clock_text(seen)}"
        )
    took = ""
    if attempt.ended_at is not None:
        took = f" after {attempt.ended_at - attempt.started_at:.2f} s"
    words = OUTCOME_WORDS.get(attempt.outcome, attempt.outcome)
    line = f"attempt {attempt.number} {words}{took} on {where}"
    if attempt.error:
        line += f": {attempt.error}"
    return line


def describe_job(job: JobRecord) -> list[str]:
    """The attempt timeline: 'why did this run twice?' answered line by line."""
    lines = [f"job {job.id} {job.name} (queue {job.queue}): {job.state}"]
    lines.append(f"  arguments: {arguments_text(job.payload)}")
    tries = "unlimited" if job.policy.tries is None else str(job.policy.tries)
    lines.append(
        f"  dispatched {clock_text(job.created_at)}; tries used {job.tries_used} of {tries}; "
        f"timeout {job.policy.timeout:g} s"
    )
    if job.priority:
        lines.append(f"  priority {job.priority} (lower runs first in queue {job.queue})")
    if job.state == "scheduled":
        lines.append(f"  next run at {clock_text(job.run_at)}")
    for attempt in job.attempts:
        lines.append("  " + describe_attempt(attempt))
    if not job.attempts:
        lines.append("  no attempt yet")
    if job.state == "failed" and job.last_error:
        lines.append(f"  failed: {job.last_error}")
    if job.state == "cancelled" and job.finished_at is not None:
        lines.append(f"  cancelled at {clock_text(job.finished_at)}; it will not run again")
    if job.result_text is not None:
        lines.append(f"  result: {result_text(job.result_text)}")
    runs = [a for a in job.attempts if a.outcome not in ("deferred",)]
    if len(runs) > 1:
        reasons = ", ".join(
            f"attempt {a.number} {OUTCOME_WORDS.get(a.outcome or '', 'did not end')}"
            for a in runs[:-1]
        )
        lines.append(f"  why it ran {len(runs)} times: {reasons}")
    return lines


def arguments_text(text: str) -> str:
    if payload.is_encrypted(text):
        return "(encrypted)"
    try:
        args = payload.decode(text)
    except PayloadError as exc:
        return f"(unreadable: {exc})"
    parts = [repr(a) for a in args.args] + [f"{k}={v!r}" for k, v in args.kwargs.items()]
    shown = ", ".join(parts) or "(none)"
    return shown if len(shown) < 200 else shown[:197] + "..."


def result_text(text: str) -> str:
    """A stored result as it is stored (JSON text, printed literally), "(encrypted)" when
    sealed: the dashboard and the terminal never show what the job encrypted."""
    return "(encrypted)" if payload.is_encrypted(text) else text

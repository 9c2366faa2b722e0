"""Jobs and attempts in words a person understands; shared by the CLI and the dashboard."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tenure.core import causes, chains, payload
from tenure.core.errors import PayloadError
from tenure.core.records import AttemptRecord, JobRecord
from tenure.core.words import clock_text

# A link the store has not dispatched yet (its previous link has not succeeded): no row yet.
WAITING = "waiting"
NOT_QUEUED = "not queued"  # a catch or finally the chain has not reached

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
    cause = causes.words(attempt.cause) if attempt.outcome != "succeeded" else ""
    if cause and cause not in (attempt.error or ""):  # said once, not twice
        line += f" [cause: {cause}]"
    if attempt.error:
        line += f": {attempt.error}"
    return line


def describe_job(job: JobRecord, now: float | None = None) -> list[str]:
    """The attempt timeline: 'why did this run twice?' answered line by line. With `now`
    (the store's clock), a running job whose lease has expired says so."""
    lines = [f"job {job.id} {job.name} (queue {job.queue}): {job.state}"]
    lines.append(f"  arguments: {arguments_text(job.payload, job.chain_text)}")
    if job.batch_id is not None:
        lines.append(f"  batch: {job.batch_id} (tenure batch show {job.batch_id})")
    tries = "unlimited" if job.policy.tries is None else str(job.policy.tries)
    lines.append(
        f"  dispatched {clock_text(job.created_at)}; tries used {job.tries_used} of {tries}; "
        f"timeout {job.policy.timeout:g} s"
    )
    if job.priority:
        lines.append(f"  priority {job.priority} (lower runs first in queue {job.queue})")
    if job.waiting_on is not None:
        lines.append(f"  waiting on concurrency key {job.waiting_on!r}")
    if job.state == "scheduled":
        lines.append(f"  next run at {clock_text(job.run_at)}")
    before = 0  # the number of the attempt shown last
    for attempt in job.attempts:
        if attempt.number > before + 1:
            lines.append("  " + unrecorded(job, before + 1, attempt.number - 1))
        lines.append("  " + describe_attempt(attempt))
        before = attempt.number
    stale = lease_expired(job, now)
    if stale is not None:
        lines.append("  " + stale)
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


def unrecorded(job: JobRecord, first: int, last: int) -> str:
    """Why attempt numbers `first` to `last` have no line. Every reserve takes the next
    number; only a repeated hand-back of a job its worker's code does not know leaves no row
    (Store.end_attempt's `record`): a worker records its refusal of a job once, and only a
    worker that did so hands it back unrecorded afterwards. Any other gap is a row the store
    no longer has, said as such rather than guessed at."""
    which = f"attempt {first}" if first == last else f"attempts {first} to {last}"
    refused_by = sorted(
        {
            a.worker_id
            for a in job.attempts
            if a.number < first and a.outcome == "deferred" and a.cause == causes.UNKNOWN_JOB
        }
    )
    if not refused_by:
        return f"{which}: no record of {'it' if first == last else 'them'} in the store"
    who = (
        f"worker {refused_by[0]}"
        if len(refused_by) == 1
        else "one of workers " + ", ".join(refused_by)
    )
    return (
        f"{which}: handed back again by {who}, whose code does not know this job; no try "
        "used, not recorded (a worker's refusal of a job is recorded once, not each round)"
    )


def lease_expired(job: JobRecord, now: float | None) -> str | None:
    """A running job whose lease ran out: its worker stopped renewing it (killed, frozen,
    cut off). Until a live worker's rescue ends the attempt, "running" alone would mislead."""
    if now is None or job.state != "running" or job.lease_expires_at is None:
        return None
    if now <= job.lease_expires_at:
        return None
    ago = now - job.lease_expires_at
    return (
        f"its lease expired {ago:.0f} s ago, at {clock_text(job.lease_expires_at)}: its worker "
        "stopped renewing it (killed or cut off?); a live worker rescues it as crashed and "
        "retries it"
    )


def arguments_text(text: str, chain_text: str | None = None) -> str:
    """The arguments as the job is called with them. A chain link with pass_result=True
    takes the previous link's result first: shown as stored once the store copied it (JSON
    text), else named by the link it comes from, never "(none)"."""
    if payload.is_encrypted(text):
        return "(encrypted)"
    try:
        args = payload.decode(text)
    except PayloadError as exc:
        return f"(unreadable: {exc})"
    parts = [repr(a) for a in args.args] + [f"{k}={v!r}" for k, v in args.kwargs.items()]
    if args.passed_from is not None:
        copied, result = chains.passed_input(chain_text)
        if not copied:
            passed = f"<the result of link {args.passed_from}, once it succeeds>"
        else:
            passed = "None" if result is None else result_text(result)
        parts.insert(0, passed)
    shown = ", ".join(parts) or "(none)"
    return shown if len(shown) < 200 else shown[:197] + "..."


def result_text(text: str) -> str:
    """A stored result as it is stored (JSON text, printed literally), "(encrypted)" when
    sealed: the dashboard and the terminal never show what the job encrypted."""
    return "(encrypted)" if payload.is_encrypted(text) else text


@dataclass(frozen=True)
class ChainStop:
    """One link (or the catch, or the finally) of a chain, as `jobs show` and the dashboard
    draw it."""

    role: str  # "link" | "catch" | "finally"
    position: int | None  # a link's, 1-based
    id: str
    name: str
    state: str  # the job's, or WAITING / NOT_QUEUED while it has no row
    current: bool  # the job being shown


def chain_stops(
    record: JobRecord, find: Callable[[str], JobRecord | None], current: str | None = None
) -> list[ChainStop]:
    """Every link of the record's chain with its state, then catch and finally; [] for a job
    outside any chain. `find` reads a job (None when absent); `current`: the link being shown
    (default: the record's own)."""
    shown = chains.info(record.chain_text)
    if shown is None:
        return []
    this = current or record.id
    stops: list[ChainStop] = []
    for link in shown.links:
        found = record if link.id == record.id else find(link.id)
        state = found.state if found is not None else WAITING
        stops.append(ChainStop("link", link.position, link.id, link.name, state, link.id == this))
    for role, job_id in (("catch", shown.catch_id), ("finally", shown.finally_id)):
        if job_id is None:
            continue
        found = find(job_id)
        name = found.name if found is not None else role
        stops.append(
            ChainStop(role, None, job_id, name, found.state if found else NOT_QUEUED, False)
        )
    return stops


def chain_lines(record: JobRecord, stops: list[ChainStop]) -> list[str]:
    """The chain in words: position, previous and next, then every link's state."""
    shown = chains.info(record.chain_text)
    if shown is None or not stops:
        return []
    links = [s for s in stops if s.role == "link"]
    by_id = {s.id: s for s in links}

    def named(link: chains.ChainLink | None) -> str:
        if link is None:
            return "none"
        stop = by_id.get(link.id)
        return f"{link.id} ({link.name}, {stop.state if stop else WAITING})"

    lines = [
        f"  chain {shown.id}: link {shown.position} of {len(shown.links)}"
        + (", passing each result to the next link" if shown.pass_result else ""),
        f"    previous {named(shown.previous)}; next {named(shown.next)}",
    ]
    for stop in stops:
        label = f"{stop.position}." if stop.role == "link" else f"{stop.role}:"
        mark = "  <- this job" if stop.current else ""
        lines.append(f"    {label} {stop.name} {stop.id} {stop.state}{mark}")
    return lines


def waiting_link(job_id: str, find: Callable[[str], JobRecord | None]) -> list[str] | None:
    """`tenure jobs show` of a chain link the store has not dispatched yet (it has no row):
    its chain, found through an earlier link; None when `job_id` is no such link."""
    for earlier in chains.earlier_links(job_id):
        record = find(earlier)
        shown = chains.info(record.chain_text) if record is not None else None
        if record is None or shown is None:
            continue
        ours = [link for link in shown.links if link.id == job_id]
        if not ours:
            return None
        link = ours[0]
        stops = chain_stops(record, find, current=job_id)
        lines = [
            f"job {job_id} {link.name}: {WAITING} (link {link.position} of {len(shown.links)} of "
            f"chain {shown.id}; the store queues it when link {link.position - 1} succeeds)"
        ]
        body = chain_lines(record, stops)
        return lines + body[2:] if len(body) > 2 else lines
    return None

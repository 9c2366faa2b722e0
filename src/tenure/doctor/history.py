"""What the store's own history says: slow jobs, crash loops, orphaned queues, jobs no live
worker knows (a rolling deploy not rolled out), and attempts that overlapped (which tenure
exists to prevent). Uses only the Store interface, so it reads
every backend the same way."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from tenure import rolling
from tenure.core import causes
from tenure.core.records import AttemptRecord, JobRecord
from tenure.doctor.model import Finding, JobModel, Source, Value
from tenure.doctor.rules import finding
from tenure.stores.base import Store, get_job

Locate = Callable[[str], Source]
TIMED_OUTCOMES = ("succeeded", "failed", "timed_out")


@dataclass(frozen=True)
class Limits:
    jobs_per_state: int = 500
    min_samples: int = 3
    near_timeout_share: float = 0.8
    budget_s: float = 5.0
    crash_streak: int = 3
    worker_silent_s: float = 60.0  # a worker heartbeats every lease/3; a minute of silence is dead
    overlap_slack_s: float = 0.001


def read_history(store: Store, limits: Limits) -> list[JobRecord]:
    """Recent jobs with their attempts (list_jobs omits attempts). Queued and scheduled jobs
    count too: a crash-looping job spends its life waiting for the next retry."""
    out: list[JobRecord] = []
    for state in ("succeeded", "failed", "running", "queued", "scheduled"):
        for summary in store.list_jobs(state=state, limit=limits.jobs_per_state):
            record = get_job(store, summary.id)
            if record is not None:
                out.append(record)
    return out


def measure(records: list[JobRecord], limits: Limits, where: str) -> dict[str, Value]:
    """Each job's p95 attempt duration, for jobs with at least `limits.min_samples` ended
    attempts: how long it really runs, which the clock checks prefer to its timeout."""
    out: dict[str, Value] = {}
    for name, values in sorted(_attempt_durations(records).items()):
        if len(values) >= limits.min_samples:
            out[name] = Value("p95 duration", round(p95(values), 2), "s",
                              Source(note=f"{where}, {len(values)} attempts"))  # fmt: skip
    return out


def _attempt_durations(records: list[JobRecord]) -> dict[str, list[float]]:
    durations: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for attempt in record.attempts:
            if attempt.outcome in TIMED_OUTCOMES and attempt.ended_at is not None:
                durations[record.name].append(attempt.ended_at - attempt.started_at)
    return durations


def check_history(
    store: Store,
    jobs: dict[str, JobModel],
    fallback: Source,
    limits: Limits | None = None,
    records: list[JobRecord] | None = None,
) -> list[Finding]:
    """`records`: the history already read with read_history, so it is read once per run."""
    limits = limits or Limits()
    now = store.now()
    records = read_history(store, limits) if records is None else records
    where = store_note(store)

    def located(name: str) -> Source:
        job = jobs.get(name)
        return job.source if job is not None else fallback

    out = _durations(records, jobs, limits, where, located)
    out += _crash_loops(records, limits, located)
    out += _overlaps(records, now, limits, located)
    out += _orphaned_queues(store, jobs, now, limits, fallback)
    out += _unknown_jobs(store, records, now, limits, located)
    return out


def store_note(store: Store) -> str:
    from tenure.core.urls import redact

    return f"history in {redact(store.url)}"


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _durations(
    records: list[JobRecord],
    jobs: dict[str, JobModel],
    limits: Limits,
    where: str,
    located: Locate,
) -> list[Finding]:
    timeouts = {record.name: record.policy.timeout for record in records}
    out: list[Finding] = []
    for name, measured in measure(records, limits, where).items():
        slow = measured.amount or 0.0
        model = jobs.get(name)
        timeout = model.timeout if model is not None and model.timeout else None
        limit = timeout.amount if timeout is not None else timeouts[name]
        timeout_value = timeout or Value("job timeout", limit, "s", Source(note="policy stored"))
        if limit and slow > limits.near_timeout_share * limit:
            out.append(finding(
                "near-timeout",
                f"job '{name}' takes {slow:.1f} s in its slowest 5% of runs, "
                f"{slow / limit:.0%} of its {limit:g} s timeout: bigger inputs will time it out "
                "and retry it from the start.",
                "make it a batch of smaller jobs (app.batch_over_ids), or raise timeout= "
                "(and the worker's --grace with it)",
                located(name), clocks=(measured, timeout_value), job=name))  # fmt: skip
        if slow > limits.budget_s:
            out.append(finding(
                "over-budget",
                f"job '{name}' takes {slow:.1f} s in its slowest 5% of runs, over the "
                f"{limits.budget_s:g}-second budget: deploys interrupt it and a retry redoes "
                "all of it.",
                f"split it: app.batch_over_ids({name}, lo, hi, chunk=50) runs {name}(lo, hi) "
                "on id ranges as small jobs with visible progress",
                located(name), clocks=(measured,), job=name))  # fmt: skip
    return out


# What each recorded cause of a crash loop asks a person to do (tenure.core.causes).
CRASH_ADVICE = {
    causes.OOM_KILL: "raise the container's memory or split the job into smaller ones",
    causes.MEMORY_CAP: "raise the worker's --memory or split the job into smaller ones",
    causes.DEPLOY: "give deploys a grace longer than the job (stop_grace_period, "
    "terminationGracePeriodSeconds, TimeoutStopSec) or split the job into shorter ones",
    causes.FAULT: "a C extension or the interpreter crashes on this input: find it with "
    "faulthandler (PYTHONFAULTHANDLER=1)",
    causes.SIGKILL: "find what kills it from outside (a watchdog, a person's kill -9, an OOM "
    "killer the worker cannot see)",
    causes.WORKER_VANISHED: "its workers die or lose their host while it runs: read the hosts' "
    "logs at those times",
}


def _crash_loops(records: list[JobRecord], limits: Limits, located: Locate) -> list[Finding]:
    looping: dict[str, list[tuple[str, int, list[AttemptRecord]]]] = defaultdict(list)
    for record in records:
        crashes: list[AttemptRecord] = []  # the crashes in a row, latest first
        for attempt in reversed(record.attempts):
            if attempt.outcome == "crashed":
                crashes.append(attempt)
            elif attempt.outcome is not None:
                break
        if len(crashes) >= limits.crash_streak:
            looping[record.name].append((record.id, len(crashes), crashes))
    out: list[Finding] = []
    for name, hits in sorted(looping.items()):
        job_id, streak, seen = max(hits, key=lambda hit: hit[1])
        cause, count = Counter(a.cause for a in seen).most_common(1)[0]
        why = (
            f"{count} of {streak} were {causes.words(cause)}"
            + _memory_at([a for a in seen if a.cause == cause])
            if cause is not None
            else "its process dies without an exception (out of memory, SIGKILL, lost host)"
        )
        advice = CRASH_ADVICE.get(
            cause or "", "if memory, set the worker's --memory and split the work"
        )
        out.append(finding(
            "crash-loop",
            f"job '{name}' crashed {streak} attempts in a row (job {job_id}"
            + (f" and {len(hits) - 1} more" if len(hits) > 1 else "")
            + f"): {why}, and each retry repeats whatever it did before dying.",
            f"read `tenure jobs show {job_id}`; {advice}; keep count_crashes=True so "
            "max_exceptions stops the loop",
            located(name), job=name))  # fmt: skip
    return out


def _memory_at(crashes: list[AttemptRecord]) -> str:
    """' at about 1.9 GB': the median of the crashes' last memory readings, if any were
    recorded (`AttemptRecord.memory_mb`, the field; its error only words it for a person)."""
    readings = sorted(a.memory_mb for a in crashes if a.memory_mb is not None and a.memory_mb > 0)
    if not readings:
        return ""
    mb = readings[len(readings) // 2]
    return f" at about {mb / 1024:.1f} GB" if mb >= 1024 else f" at about {mb:.0f} MB"


def _overlaps(
    records: list[JobRecord], now: float, limits: Limits, located: Locate
) -> list[Finding]:
    out: list[Finding] = []
    for record in records:
        attempts = sorted(record.attempts, key=lambda a: a.started_at)
        for earlier, later in itertools.pairwise(attempts):
            end = earlier.ended_at if earlier.ended_at is not None else now
            if later.started_at < end - limits.overlap_slack_s:
                out.append(finding(
                    "attempts-overlap",
                    f"job {record.id} ('{record.name}'): attempt {later.number} started on "
                    f"{later.worker_id} while attempt {earlier.number} was still running on "
                    f"{earlier.worker_id}: the job ran twice at once. This is a tenure bug.",
                    f"report it with the output of `tenure jobs show {record.id}` and the "
                    "store backend in use",
                    located(record.name), job=record.name))  # fmt: skip
                break
    return out


def _orphaned_queues(
    store: Store, jobs: dict[str, JobModel], now: float, limits: Limits, fallback: Source
) -> list[Finding]:
    waiting: dict[str, int] = defaultdict(int)
    timeouts: dict[str, float] = defaultdict(float)  # the longest timeout of a queue's jobs
    for record in store.list_jobs(state="queued", limit=limits.jobs_per_state):
        waiting[record.queue] += 1
        timeouts[record.queue] = max(timeouts[record.queue], record.policy.timeout)
    for job in jobs.values():
        if job.timeout is not None and job.timeout.amount:
            timeouts[job.queue] = max(timeouts[job.queue], float(job.timeout.amount))
    # the oldest ready job's age per queue: an index lookup per queue, not a scan
    ages = {q: c.oldest_ready_age for q, c in store.queue_counts().items()}
    live = [
        w for w in store.list_workers()
        if w.stopped_at is None and now - w.last_seen_at <= limits.worker_silent_s
    ]  # fmt: skip
    served = {q for w in live for q in w.queues}
    out: list[Finding] = []
    for queue, count in sorted(waiting.items()):
        if queue in served:
            continue
        age = ages.get(queue)
        if age is not None and timeouts[queue] and age > timeouts[queue]:
            out.append(finding(
                "queue-stalled",
                f"the oldest ready job in queue '{queue}' has waited {age:.0f} s, longer than "
                f"its jobs' {timeouts[queue]:g} s timeout, and no live worker reads the queue "
                f"({count} job(s) waiting): nothing has run them.",
                f"start one: tenure worker --app ... --queues {queue}; `tenure queues "
                f"--max-wait {timeouts[queue]:g}` as a probe catches this next time",
                fallback))  # fmt: skip
            continue
        out.append(finding(
            "queue-without-worker",
            f"{count} job(s) are waiting in queue '{queue}' and no live worker reads it "
            f"({len(live)} live worker(s); none seen in the last {limits.worker_silent_s:g} s "
            "reads this queue): nothing will run them.",
            f"start one: tenure worker --app ... --queues {queue}",
            fallback))  # fmt: skip
    return out


def _unknown_jobs(
    store: Store, records: list[JobRecord], now: float, limits: Limits, located: Locate
) -> list[Finding]:
    """Rolling deploys: jobs waiting that no live worker serving their queue knows, and jobs
    that failed because none that knew them ran them within the workers' --unknown-grace."""
    live = [
        w for w in store.list_workers()
        if w.stopped_at is None and now - w.last_seen_at <= limits.worker_silent_s
    ]  # fmt: skip
    waiting = sorted(
        q for q, c in store.queue_counts().items() if c.get("queued", 0) or c.get("scheduled", 0)
    )
    out: list[Finding] = []
    for u in rolling.unknown_waiting(store, live, waiting) if live and waiting else []:
        names = ", ".join(f"'{n}'" for n in u.names[:5]) + (", ..." if len(u.names) > 5 else "")
        out.append(finding(
            "unknown-job-waiting",
            f"{u.count}{'+' if u.capped else ''} job(s) waiting in queue '{u.queue}' ({names}) "
            "are defined by no live worker serving it: a deploy not rolled out yet, or workers "
            "left on older code. They are handed back until one that knows them runs them, and "
            "fail after the workers' --unknown-grace.",
            "finish the deploy (start workers with the code that defines them); `tenure "
            "workers` shows how many jobs each worker knows",
            located(u.names[0]), job=u.names[0]))  # fmt: skip
    failed: dict[str, list[str]] = defaultdict(list)
    for record in records:
        last = record.attempts[-1] if record.attempts else None
        if record.state == "failed" and last is not None and last.cause == causes.UNKNOWN_JOB:
            failed[record.name].append(record.id)
    for name, ids in sorted(failed.items()):
        out.append(finding(
            "unknown-job-failed",
            f"{len(ids)} job(s) '{name}' failed because no worker that knows the name ran them "
            f"(job {ids[0]}" + (f" and {len(ids) - 1} more" if len(ids) > 1 else "") + "): "
            "the code that defines it was not deployed, or not before --unknown-grace ran out.",
            f"deploy the code that defines '{name}', then `tenure failed retry {ids[0]}`; if "
            "deploys roll out slowly, raise the workers' --unknown-grace",
            located(name), job=name))  # fmt: skip
    return out

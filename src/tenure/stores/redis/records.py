"""Reading the Redis store's hashes back into records, tolerating damage.

A hash edited by hand, cut short by a bad migration or holding bytes that are not text must
never crash a reader (`reserve`, `get_job`, `list_jobs`, the dashboard): missing numbers read as
0, missing times as unknown, and a job missing required fields says so in its `last_error`.
"""

from __future__ import annotations

import json
from typing import Any

from tenure.core import batch as rules
from tenure.core.records import AttemptRecord, BatchRecord, JobRecord, WorkerRecord
from tenure.core.records import batch_record as stored_batch
from tenure.core.retry import Policy
from tenure.core.states import PARKED_AT, QUEUED, RUNNING, visible_state

PROGRESS_UNITS = 1_000_000  # a member's progress and a batch's `partial` are in millionths


def to_float(text: Any, default: float = 0.0) -> float:
    value = to_opt_float(text)
    return default if value is None else value


def to_opt_float(text: Any) -> float | None:
    try:
        return None if text is None else float(text)
    except (TypeError, ValueError):
        return None


def to_int(text: Any, default: int = 0) -> int:
    value = to_opt_int(text)
    return default if value is None else value


def to_opt_int(text: Any) -> int | None:
    try:
        return None if text is None else int(float(text))
    except (TypeError, ValueError, OverflowError):
        return None


REQUIRED_JOB_FIELDS = ("name", "payload", "state", "policy", "created_at", "run_at")
# Every field `job_record` reads, and `seq` (a listing's order among jobs created in the same
# instant): a listing HMGETs these alone. Layout 4 keeps a job's ended attempts ("N.outcome",
# "N.traceback", ...) in the same hash, so an HGETALL would carry every attempt's traceback
# to a listing that shows none of them (its records have no attempts; `last_error` is the
# job's own field). Reading one job with its history (`_read_job`) still reads the hash whole.
LISTED_JOB_FIELDS = (
    *REQUIRED_JOB_FIELDS,
    "queue",
    "finished_at",
    "tries_used",
    "exceptions",
    "last_error",
    "lease_expires_at",
    "worker_id",
    "batch_id",
    "result",
    "priority",
    "chain",
    "concurrency_key",
    "seq",
)


def job_record(
    job_id: str, queue: str, fields: dict[str, str], now: float, attempts: list[AttemptRecord]
) -> JobRecord:
    last_error = fields.get("last_error")
    missing = [name for name in REQUIRED_JOB_FIELDS if name not in fields]
    if missing and last_error is None:
        # Shown, not raised: a person can forget the job; a reader must not crash on it.
        last_error = f"the job's record in Redis is damaged: missing {', '.join(missing)}"
    stored = fields.get("state") or "failed"
    run_at = to_float(fields.get("run_at"))
    return JobRecord(
        id=job_id,
        name=fields.get("name", ""),
        queue=fields.get("queue") or queue,
        payload=fields.get("payload", ""),
        state=visible_state(stored, run_at, now),
        policy=Policy.from_json(fields.get("policy", "")),
        created_at=to_float(fields.get("created_at")),
        run_at=run_at,
        finished_at=to_opt_float(fields.get("finished_at")),
        tries_used=to_int(fields.get("tries_used")),
        exceptions=to_int(fields.get("exceptions")),
        last_error=last_error,
        # a finished job keeps its last lease in Redis (one HDEL fewer per job): not shown
        lease_expires_at=(
            to_opt_float(fields.get("lease_expires_at")) if stored == RUNNING else None
        ),
        worker_id=fields.get("worker_id"),
        batch_id=fields.get("batch_id"),
        attempts=attempts,
        result_text=fields.get("result"),
        priority=to_int(fields.get("priority")),
        chain_text=fields.get("chain"),
        waiting_on=(
            fields.get("concurrency_key") if stored == QUEUED and run_at >= PARKED_AT else None
        ),
    )


# The attempt a running job is on, as layouts 3 and 4 kept it (an older release's worker may
# still claim so during a rolling deploy): in the job's own hash under these fields until its
# end writes it as attempt fields "N.worker_id", ... (lua/lib/prelude.lua's OPEN_FIELDS),
# marked by a non-empty cur.started_at. Layout 5's claim writes "N.worker_id", ... at once.
# Job field -> attempt field.
OPEN_ATTEMPT_FIELDS = {
    "worker_id": "worker_id",
    "cur.host": "host",
    "cur.pid": "pid",
    "cur.started_at": "started_at",
    "cur.last_heartbeat_at": "last_heartbeat_at",
    "cur.memory_mb": "memory_mb",
}


def with_open_attempt(job: dict[str, str]) -> dict[str, str]:
    """The job's hash, with its attempts ("N.outcome", ...: layouts 4 and 5 keep them there),
    and a running job's open attempt an older release claimed as if it were there too."""
    number = job.get("attempt", "")
    if job.get("state") != "running" or not number.isdigit() or f"{number}.outcome" in job:
        return job
    if not job.get("cur.started_at"):  # claimed by layout 5: its fields are its own already
        return job
    opened = {
        f"{number}.{name}": job[field]
        for field, name in OPEN_ATTEMPT_FIELDS.items()
        if job.get(field)
    }
    return {**job, **opened}


def attempt_records(job_id: str, fields: dict[str, str]) -> list[AttemptRecord]:
    grouped: dict[int, dict[str, str]] = {}
    for key, value in fields.items():
        number, _, name = key.partition(".")
        if number.isdigit():
            grouped.setdefault(int(number), {})[name] = value
    return [
        AttemptRecord(
            job_id=job_id,
            number=number,
            worker_id=a.get("worker_id", ""),
            host=a.get("host", ""),
            pid=to_int(a.get("pid")),
            started_at=to_float(a.get("started_at")),
            ended_at=to_opt_float(a.get("ended_at")),
            outcome=a.get("outcome"),
            error=a.get("error"),
            traceback=a.get("traceback"),
            last_heartbeat_at=to_opt_float(a.get("last_heartbeat_at")),
            cause=a.get("cause"),
            memory_mb=to_opt_float(a.get("memory_mb")),
        )
        for number, a in sorted(grouped.items())
    ]


def worker_record(worker_id: str, fields: dict[str, str]) -> WorkerRecord:
    try:
        queues = tuple(str(q) for q in json.loads(fields.get("queues", "[]")))
    except (TypeError, ValueError):
        queues = ()
    known: tuple[str, ...] | None = None
    if "known" in fields:
        try:
            known = tuple(str(n) for n in json.loads(fields["known"]))
        except (TypeError, ValueError):
            known = None
    return WorkerRecord(
        id=worker_id,
        host=fields.get("host", ""),
        pid=to_int(fields.get("pid")),
        queues=queues,
        concurrency=to_int(fields.get("concurrency"), 1),
        started_at=to_float(fields.get("started_at")),
        last_seen_at=to_float(fields.get("last_seen_at")),
        stopped_at=to_opt_float(fields.get("stopped_at")),
        stopping_at=to_opt_float(fields.get("stopping_at")),
        known=known,
    )


def count(text: Any) -> int:
    """A stored counter; a damaged or negative one reads as 0, as on SQLite."""
    return max(0, to_int(text))


def batch_record(batch_id: str, fields: dict[str, str]) -> BatchRecord:
    """The record every backend builds (core.records.batch_record: one rule for total,
    pending and progress); a damaged field reads as 0 or unknown, and a state that is missing
    or not a batch state reads as failed (its rules can no longer run)."""
    state = fields.get("state", "")
    counts = rules.BatchCounts(
        state=state if state in rules.BATCH_STATES else rules.FAILED,
        jobs=count(fields.get("jobs")),
        done=count(fields.get("done")),
        failed=count(fields.get("failed")),
        cancelled=count(fields.get("cancelled")),
        allow_failures=fields.get("allow_failures") == "1",
        catch_sent=fields.get("catch_sent") == "1",
        finished=fields.get("finished") == "1",
    )
    declared = to_opt_int(fields.get("declared_total"))
    row = {
        "id": batch_id,
        "name": fields.get("name", ""),
        "created_at": to_float(fields.get("created_at")),
        "finished_at": to_opt_float(fields.get("finished_at")),
        **{f"{kind}_job_id": fields.get(f"{kind}_job_id") for kind in ("then", "catch", "finally")},
    }
    partial = max(0, to_int(fields.get("partial"))) / PROGRESS_UNITS
    return stored_batch(row, counts, None if declared is None else max(0, declared), partial)

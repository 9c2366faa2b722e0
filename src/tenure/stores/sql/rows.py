"""Rows to records on the SQL stores, written once: a claimed job, a tenure_attempts row and a
tenure_jobs row read by column name (a sqlite3.Row or a psycopg dict row) become what crosses
the seam."""

from __future__ import annotations

from typing import Any

from tenure.core.records import AttemptRecord, EffectRecord, JobRecord
from tenure.core.retry import Policy
from tenure.core.states import PARKED_AT, QUEUED, visible_state


def attempt_record(row: Any) -> AttemptRecord:
    return AttemptRecord(
        job_id=row["job_id"],
        number=row["number"],
        worker_id=row["worker_id"],
        host=row["host"],
        pid=row["pid"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        outcome=row["outcome"],
        error=row["error"],
        traceback=row["traceback"],
        last_heartbeat_at=row["last_heartbeat_at"],
        cause=_column(row, "cause"),
        memory_mb=_column(row, "memory_mb"),
    )


def _column(row: Any, name: str) -> Any:
    """A column a later migration added, None where the row does not carry it."""
    if isinstance(row, dict):
        return row.get(name)
    try:
        return row[name]
    except IndexError:  # a sqlite3.Row without that column
        return None


def effect_record(row: Any) -> EffectRecord:
    return EffectRecord(key=row["key"], attempt=row["attempt"], at=row["at"])


class _Numbers:
    """A row's number columns read as numbers. SQLite keeps a text a hand edit wrote into
    one ('tomorrow' as run_at): that reads as 0 (or unknown), and the job says which field was
    unreadable, instead of crashing every reader of it."""

    def __init__(self, row: Any) -> None:
        self.row = row
        self.unreadable: list[str] = []

    def number(self, name: str) -> float | None:
        value = self.row[name]
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return value
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            self.unreadable.append(f"unreadable field {name}: {value!r}")
            return None

    def time(self, name: str) -> float:
        return self.number(name) or 0.0

    def count(self, name: str) -> int:
        value = self.number(name)
        return 0 if value is None else int(value)

    def note(self, last_error: str | None) -> str | None:
        if not self.unreadable:
            return last_error
        note = f"the job's row is damaged: {'; '.join(self.unreadable)}"
        return f"{note}; {last_error}" if last_error else note


def job_record(
    row: Any,
    now: float,
    attempts: list[AttemptRecord],
    effects: list[EffectRecord] | None = None,
) -> JobRecord:
    """`now` is the store's time when the row was read: it tells queued from scheduled."""
    read = _Numbers(row)
    run_at = read.time("run_at")
    # every number read before read.note() below
    priority, lease = read.count("priority"), read.number("lease_expires_at")
    return JobRecord(
        id=row["id"],
        name=row["name"],
        queue=row["queue"],
        payload=row["payload"],
        state=visible_state(row["state"], run_at, now),
        policy=Policy.from_json(row["policy"]),
        created_at=read.time("created_at"),
        run_at=run_at,
        finished_at=read.number("finished_at"),
        tries_used=read.count("tries_used"),
        exceptions=read.count("exceptions"),
        last_error=read.note(row["last_error"]),
        lease_expires_at=lease,
        worker_id=row["worker_id"],
        batch_id=row["batch_id"],
        attempts=attempts,
        effects=effects or [],
        result_text=row["result"],
        priority=priority,
        chain_text=row["chain"],
        waiting_on=(
            row["concurrency_key"]
            if row["state"] == QUEUED and run_at >= PARKED_AT  # run_at read damage-safe above
            else None
        ),
    )

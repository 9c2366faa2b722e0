"""Rows to records on the SQL stores, written once: a claimed job, a tenure_attempts row and a
tenure_jobs row read by column name (a sqlite3.Row or a psycopg dict row) become what crosses
the seam."""

from __future__ import annotations

from typing import Any

from tenure.retry import Policy
from tenure.states import PARKED_AT, QUEUED, visible_state
from tenure.stores.records import AttemptRecord, EffectRecord, JobRecord


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
    )


def effect_record(row: Any) -> EffectRecord:
    return EffectRecord(key=row["key"], attempt=row["attempt"], at=row["at"])


def job_record(
    row: Any,
    now: float,
    attempts: list[AttemptRecord],
    effects: list[EffectRecord] | None = None,
) -> JobRecord:
    """`now` is the store's time when the row was read: it tells queued from scheduled."""
    return JobRecord(
        id=row["id"],
        name=row["name"],
        queue=row["queue"],
        payload=row["payload"],
        state=visible_state(row["state"], row["run_at"], now),
        policy=Policy.from_json(row["policy"]),
        created_at=row["created_at"],
        run_at=row["run_at"],
        finished_at=row["finished_at"],
        tries_used=row["tries_used"],
        exceptions=row["exceptions"],
        last_error=row["last_error"],
        lease_expires_at=row["lease_expires_at"],
        worker_id=row["worker_id"],
        batch_id=row["batch_id"],
        attempts=attempts,
        effects=effects or [],
        result_text=row["result"],
        priority=row["priority"],
        chain_text=row["chain"],
        waiting_on=(
            row["concurrency_key"]
            if row["state"] == QUEUED and row["run_at"] >= PARKED_AT
            else None
        ),
    )

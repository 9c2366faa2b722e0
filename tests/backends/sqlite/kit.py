"""The conformance suite's hands behind a SQLite store: the file, opened with sqlite3."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from tenure.stores.sqlite import sqlite_path


class SQLiteKit:
    # SQLite's columns take any value.
    damaged_batch: Mapping[str, str] = {"state": "bogus", "callbacks": "{not json"}
    unreadable_callbacks: Mapping[str, str] = {"callbacks": "{not json"}
    counts_can_be_damaged = True
    statements_after_its_own_commit_land = True
    foreign_connection_refusal = "not to this store"
    placeholder = "?"

    def __init__(self, store_url: str) -> None:
        self.path = sqlite_path(store_url)

    def app_connection(self, *, autocommit: bool = False) -> Any:
        if autocommit:
            return sqlite3.connect(self.path, timeout=30, isolation_level=None)
        return sqlite3.connect(self.path, timeout=30)

    def app_table(self, name: str) -> str:
        return name

    def damage_job(self, job_id: str, field: str, value: str) -> int:
        with sqlite3.connect(self.path) as conn:
            sql = f"UPDATE tenure_jobs SET {field} = ? WHERE id = ?"
            return conn.execute(sql, (value, job_id)).rowcount

    def stored_job_field(self, job_id: str, field: str) -> str | None:
        with sqlite3.connect(self.path) as conn:
            sql = f"SELECT {field} FROM tenure_jobs WHERE id = ?"
            row = conn.execute(sql, (job_id,)).fetchone()
            return None if row is None or row[0] is None else str(row[0])

    def damage_batch(self, batch_id: str, fields: Mapping[str, str]) -> None:
        with sqlite3.connect(self.path) as conn:
            for field, value in fields.items():
                sql = f"UPDATE tenure_batches SET {field} = ? WHERE id = ?"
                conn.execute(sql, (value, batch_id))

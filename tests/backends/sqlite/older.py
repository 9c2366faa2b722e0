"""A store at an older schema version, filled by the code of now (the migration tests).

The code of now writes `guard_state` (migration 0018), which older versions lack: the column
is lent while the old store is filled and taken back before the upgrade, which then adds it
and fills it from the jobs' keys as it would for a store an older release wrote."""

from __future__ import annotations

import sqlite3
from pathlib import Path

GUARD_STATE_FROM = 18  # the version that added the column


def lend_guard_state(conn: sqlite3.Connection, version: int) -> None:
    if version < GUARD_STATE_FROM:
        conn.execute("ALTER TABLE tenure_jobs ADD COLUMN guard_state TEXT")


def take_back_guard_state(path: Path, version: int) -> None:
    if version < GUARD_STATE_FROM:
        with sqlite3.connect(path) as conn:
            conn.execute("ALTER TABLE tenure_jobs DROP COLUMN guard_state")


def rows(path: Path, table: str) -> list[tuple[object, ...]]:
    """The table's rows, every column but guard_state (which only some versions have)."""
    with sqlite3.connect(path) as conn:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        keep = [i for i, d in enumerate(cur.description) if d[0] != "guard_state"]
        return [tuple(row[i] for i in keep) for row in cur.fetchall()]

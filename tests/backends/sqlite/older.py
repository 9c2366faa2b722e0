"""A store at an older schema version, filled by the code of now (the migration tests).

The code of now writes `guard_state` (migration 0018), which older versions lack: the column
is lent while the old store is filled and taken back before the upgrade, which then adds it
and fills it from the jobs' keys as it would for a store an older release wrote."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tenure.stores.sqlite import SQLiteStore, schema

GUARD_STATE_FROM = 18  # the version that added the column
KEPT = ("tenure_jobs", "tenure_attempts")  # every row of these survives an upgrade


def lend_guard_state(conn: sqlite3.Connection, version: int) -> None:
    if version < GUARD_STATE_FROM:
        conn.execute("ALTER TABLE tenure_jobs ADD COLUMN guard_state TEXT")


def take_back_guard_state(path: Path, version: int) -> None:
    if version < GUARD_STATE_FROM:
        with sqlite3.connect(path) as conn:
            conn.execute("ALTER TABLE tenure_jobs DROP COLUMN guard_state")


def store_at(path: Path, version: int) -> SQLiteStore:
    """A store whose file is at `version`, used as that release would: no later migration."""
    store = SQLiteStore(f"sqlite:///{path}")
    store.db.migrated = True  # the file is migrated by hand below, to `version` and no further
    schema.migrate(store.db.conn(), schema.MIGRATIONS[:version])
    lend_guard_state(store.db.conn(), version)
    return store


@contextmanager
def upgrade(store: SQLiteStore, path: Path, version: int) -> Iterator[SQLiteStore]:
    """The store at `version` closed, its file left as that release left it, and opened again
    by the code of now, which migrates it past `version` to the latest with every job and
    attempt row intact; closed afterwards."""
    with sqlite3.connect(path) as conn:
        assert schema.schema_version(conn) == version  # filling it migrated nothing
    before = {table: rows(path, table) for table in KEPT}
    store.close()
    take_back_guard_state(path, version)
    now = SQLiteStore(f"sqlite:///{path}")
    try:
        now.migrate()
        with sqlite3.connect(path) as conn:
            assert schema.schema_version(conn) == schema.SCHEMA_VERSION > version
        assert {table: rows(path, table) for table in KEPT} == before
        yield now
    finally:
        now.close()


def rows(path: Path, table: str) -> list[tuple[object, ...]]:
    """The table's rows, every column but guard_state (which only some versions have)."""
    with sqlite3.connect(path) as conn:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        keep = [i for i, d in enumerate(cur.description) if d[0] != "guard_state"]
        return [tuple(row[i] for i in keep) for row in cur.fetchall()]


def index_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tenure_jobs'"
        )
        return {name for (name,) in found}


def entries(path: Path, index: str) -> int:
    """How many entries the index holds (its leaf pages' cells, from dbstat)."""
    with sqlite3.connect(path) as conn:
        (n,) = conn.execute(
            "SELECT coalesce(sum(ncell), 0) FROM dbstat WHERE name = ? AND pagetype = 'leaf'",
            (index,),
        ).fetchone()
        return int(n)

"""The SQLite schema: numbered migrations (migrations/NNNN_name.sql) applied in order, each once.

The version a file is at is the row `schema_version` of `tenure_control`, where schema version
1 (the only schema before migrations were numbered) already wrote it. Pending migrations are
applied in one locked transaction (BEGIN IMMEDIATE), and the version is read again once the
lock is held: two processes opening an old file at once take turns, and the second finds
nothing left to do instead of applying a migration twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from importlib import resources

from tenure.core.errors import ConfigError
from tenure.stores.sql.migrations import Migration, load_migrations

MIGRATIONS = load_migrations(
    resources.files("tenure.stores.sqlite").joinpath("migrations"), store="SQLite"
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def schema_version(conn: sqlite3.Connection) -> int:
    """The version the file is at; 0 for a file without tenure's tables."""
    try:
        row = conn.execute(
            "SELECT value FROM tenure_control WHERE key = 'schema_version'"
        ).fetchone()
    except sqlite3.OperationalError:  # no tenure_control table: no schema yet
        return 0
    if row is None:
        return 0
    text = str(row[0])
    if not text.isdigit():
        # Guessing a version would re-apply or skip migrations; a person must look.
        raise ConfigError(
            f"SQLite store: tenure_control.schema_version expected a number, got {text!r}; "
            "the file was edited by hand or is not a tenure store"
        )
    return int(text)


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> None:
    """Bring the file to the newest version. A file already there costs one read and no lock:
    a web process whose first dispatch runs inside the application's own write transaction
    (conn=) must not wait on the lock that transaction holds. A file newer than this code is
    left alone (migrations only add), as schema version 1 did."""
    if schema_version(conn) >= migrations[-1].version:
        return
    migrate_locked(conn, migrations)


def migrate_locked(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> None:
    """Take the write lock, then apply what is still pending once it is held."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(conn)  # again: another process may have migrated meanwhile
        for migration in migrations[version:]:
            for statement in statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT OR REPLACE INTO tenure_control (key, value) VALUES ('schema_version', ?)",
                (str(migration.version),),
            )
    except BaseException:
        conn.execute("ROLLBACK")
        conn.execute("PRAGMA ignore_check_constraints = OFF")  # a migration stopped midway
        raise
    conn.execute("COMMIT")


def statements(script: str) -> list[str]:
    """The statements of a migration, one by one: executescript() would commit the open
    transaction first and give up the lock. A semicolon ends a statement only where SQLite
    says the text so far is complete, so one inside a string, comment or trigger body does
    not."""
    out: list[str] = []
    start = 0
    for end, char in enumerate(script):
        if char == ";" and sqlite3.complete_statement(script[start : end + 1]):
            statement = script[start : end + 1].strip()
            if statement.strip(";").strip():
                out.append(statement)
            start = end + 1
    rest = script[start:]
    if any(line.strip() and not line.strip().startswith("--") for line in rest.splitlines()):
        raise ValueError(f"migration ends with an unterminated statement: {rest!r}")
    return out

"""What differs between the SQL engines (SQLite, PostgreSQL), as the statements written once in
stores/sql/ see it: each engine's dialect.py implements `Dialect`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from tenure.core.records import NewJob

# A sqlite3 connection or a psycopg cursor: `execute(sql, params)` returning something with
# fetchone(), fetchall() and rowcount, rows readable by column name.
Cursor = Any
Row = Any  # a sqlite3.Row or a psycopg dict row: read by column name

ID_CHUNK = 500  # ids per IN (...) list: well under SQLite's limit on bound parameters


class Dialect(Protocol):
    """SQL is written with `{s}.` before every table and `%s` for every parameter; `q()` makes
    it the engine's own."""

    greatest: str  # the larger of two values: max (SQLite) or greatest (PostgreSQL)
    lock_rows: str  # appended to a SELECT of rows about to be changed: "" or " FOR UPDATE"
    creation_order: str  # a column that orders rows (jobs, batches) made in the same instant
    clock_sql: str  # the server's clock as epoch seconds, inside a statement
    # the earliest run_at (`head`) before a bound (`%s`) of a queue's (`%s`) queued jobs, in
    # the engine's ready index: the fair-share head (guards.place_fairly)
    fair_head: str
    slot_rows: bool  # concurrency slots are counted in rows (tenure_concurrency), not jobs
    statement_clock_sql: str  # the same, read once for the whole statement
    # what a damaged row makes a statement or its reading raise (endings.isolated fails that
    # one job); never the errors of a lost connection
    row_errors: tuple[type[Exception], ...]

    def wake(self, cur: Cursor, queue: str) -> None:
        """Tell idle workers of `queue` that a job is ready, when the transaction commits."""

    def job_ended(self, cur: Cursor, job_id: str) -> None:
        """Wake whoever waits for the job's end (JobHandle.wait), when the transaction commits."""

    def lock_key(self, cur: Cursor, key: str) -> None:
        """Hold a concurrency key until the transaction ends (waited for; SQLite's one writer
        holds every key already)."""

    def end_slot(self, cur: Cursor, key: str, *, held: bool) -> None:
        """Hold a concurrency key's slots until the transaction ends (waited for), one slot
        given back when `held` (an attempt of the key ended): what a parking claim holds too,
        so a hand-back that follows sees every park committed before."""

    def q(self, sql: str) -> str: ...

    def insert_jobs(
        self, cur: Cursor, jobs: Sequence[NewJob], now: float, *, skip_existing: bool
    ) -> int:
        """Insert the jobs; how many were inserted."""

    def text_list(self, values: Sequence[str]) -> Any:
        """A list of text as a column holds it: JSON text (SQLite) or text[] (PostgreSQL)."""

    def read_text_list(self, value: Any) -> tuple[str, ...]: ...


def marks(values: Sequence[object]) -> str:
    """The parameters of an IN (...) list of `values`."""
    return ", ".join(["%s"] * len(values))


def chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """`ids` cut into IN (...) lists of at most ID_CHUNK."""
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start : start + ID_CHUNK]

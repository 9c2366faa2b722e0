"""SQLite as the shared SQL code (stores/sql/) sees it: unqualified tables, `?` parameters,
no row locks (one writer holds the whole file), and the one insert every enqueue path shares."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Sequence

from tenure.stores.sql.guards import PARKED
from tenure.stores.sqlite.database import CLOCK_SQL, ROW_ERRORS
from tenure.stores.sqlite.inserts import insert_jobs
from tenure.stores.sqlite.ready import FAIR_HEAD, PARKED_GUARDED


class SQLiteDialect:
    greatest = "max"
    lock_rows = ""  # BEGIN IMMEDIATE already holds the one write lock
    creation_order = "rowid"
    clock_sql = CLOCK_SQL
    fair_head = FAIR_HEAD
    slot_rows = False  # one writer: a key's slots are its running jobs, counted
    statement_clock_sql = CLOCK_SQL  # 'now' is one instant for a whole statement in SQLite
    row_errors: tuple[type[Exception], ...] = ROW_ERRORS

    def wake(self, cur: sqlite3.Connection, queue: str) -> None:
        pass  # waiters watch the file's data_version: every commit wakes them

    def job_ended(self, cur: sqlite3.Connection, job_id: str) -> None:
        pass  # so do the waiters of a job's end

    def lock_key(self, cur: sqlite3.Connection, key: str) -> None:
        pass  # BEGIN IMMEDIATE holds the one write lock, every key with it

    def end_slot(self, cur: sqlite3.Connection, key: str, *, held: bool) -> None:
        pass  # slots are counted from the running jobs, under the one write lock

    @staticmethod
    @functools.lru_cache(maxsize=256)
    def q(sql: str) -> str:
        # the shared statements never hold a literal '%' or '{s}.' of their own
        sql = sql.replace("{s}.", "")
        for shared, own in GUARD_READS:
            sql = sql.replace(shared, own)
        return mirror_state(sql).replace("%s", "?")

    insert_jobs = staticmethod(insert_jobs)  # inserts.py's, which jobs.py calls itself

    def text_list(self, values: Sequence[str]) -> str:
        return json.dumps(list(values))

    def read_text_list(self, value: str) -> tuple[str, ...]:
        return tuple(json.loads(value))


# The guard indexes read guard_state (migration 0018), and SQLite uses a partial index only
# for a statement that states its condition: the shared statements that read them say
# `state`, which is the same value on every row that has these keys (the CHECK holds it).
GUARD_READS = (
    (
        "concurrency_key = %s AND state = 'running'",
        "concurrency_key = %s AND guard_state = 'running'",
    ),
    (
        "concurrency_key IS NOT NULL AND state = 'running'",
        "concurrency_key IS NOT NULL AND guard_state = 'running'",
    ),
    (PARKED, PARKED_GUARDED),
    ("debounce_key = %s AND state = 'queued'", "debounce_key = %s AND guard_state = 'queued'"),
)
# A shared statement that moves a job's state: a guarded job's guard_state moves with it.
SETS_STATE = re.compile(r"^UPDATE tenure_jobs SET state = (%s|'[a-z]+'),")
# any other statement that sets tenure_jobs.state (refused: it would leave guard_state behind)
SETS_STATE_ELSEWHERE = re.compile(r"^UPDATE tenure_jobs SET (?:(?!WHERE).)*\bstate = ", re.S)


def mirror_state(sql: str) -> str:
    """`sql` setting guard_state beside state where it sets state: the new state a literal,
    or the statement's first parameter (the parameters are then numbered, so that it is
    bound twice)."""
    found = SETS_STATE.match(sql)
    if found is None:
        if SETS_STATE_ELSEWHERE.match(sql):
            raise AssertionError(f"sets state in a form mirror_state does not know: {sql}")
        return sql
    head, value = found.group(0), found.group(1)
    if value == "%s":
        parts = sql.split("%s")
        sql = parts[0] + "".join(f"?{n}{part}" for n, part in enumerate(parts[1:], 1))
        head, value = head.replace("%s", "?1"), "?1"
    return sql.replace(head, f"{head} guard_state = iif(guard_state IS NULL, NULL, {value}),", 1)


SQLITE = SQLiteDialect()

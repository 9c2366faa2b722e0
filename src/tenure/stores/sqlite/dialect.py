"""SQLite as the shared SQL code (stores/sql/) sees it: unqualified tables, `?` parameters,
no row locks (one writer holds the whole file), and the one insert every enqueue path shares."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence

from tenure.stores.sqlite.database import CLOCK_SQL, ROW_ERRORS
from tenure.stores.sqlite.inserts import insert_jobs
from tenure.stores.sqlite.ready import FAIR_HEAD


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
        return sql.replace("{s}.", "").replace("%s", "?")

    insert_jobs = staticmethod(insert_jobs)  # inserts.py's, which jobs.py calls itself

    def text_list(self, values: Sequence[str]) -> str:
        return json.dumps(list(values))

    def read_text_list(self, value: str) -> tuple[str, ...]:
        return tuple(json.loads(value))


SQLITE = SQLiteDialect()

"""The application's tables, in the same database as tenure's jobs, so that a request can write
its rows and create a batch in one transaction.

`sqlite:///PATH` is a `sqlite3` connection to the store's own file; `postgresql://...` a psycopg
one to the store's database (tenure's tables live in their own schema). SQL is written with
`%s` placeholders and adapted for sqlite3.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, credits INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS exports (id TEXT PRIMARY KEY, batch_id TEXT NOT NULL,"
    " status TEXT NOT NULL, csv TEXT)",
    # keyed by batch and customer: a re-run of a range writes nothing twice
    "CREATE TABLE IF NOT EXISTS export_lines (batch_id TEXT NOT NULL, customer_id INTEGER NOT"
    " NULL, line TEXT NOT NULL, PRIMARY KEY (batch_id, customer_id))",
]


class Db:
    """A DB-API connection with one placeholder style; `.raw` is what tenure's `conn=` takes."""

    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite:///")
        if self.sqlite:
            self.raw: Any = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
        else:
            import psycopg

            self.raw = psycopg.connect(url.split("?")[0])  # `?schema=` is tenure's, not libpq's

    def run(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(sql.replace("%s", "?") if self.sqlite else sql, params)


@contextmanager
def transaction(url: str) -> Iterator[Db]:
    """Commit when the block ends, roll back when it raises: a batch created with
    `conn=db.raw` inside it shares that fate."""
    db = Db(url)
    try:
        yield db
        db.raw.commit()
    except BaseException:
        db.raw.rollback()
        raise
    finally:
        db.raw.close()


def setup(url: str, *, customers: int = 0, credits: int = 0) -> None:
    """The tables; customers 1..N and account 1 with some credits (idempotent)."""
    with transaction(url) as db:
        for statement in SCHEMA:
            db.run(statement)
        for i in range(1, customers + 1):
            db.run(
                "INSERT INTO customers VALUES (%s, %s) ON CONFLICT DO NOTHING", (i, f"Customer {i}")
            )
        db.run("INSERT INTO accounts VALUES (1, %s) ON CONFLICT DO NOTHING", (credits,))

"""The application's own database: the same one tenure keeps its jobs in, so that a request can
write its rows and enqueue a job in one transaction.

`sqlite:///PATH` opens a `sqlite3` connection to the store's own file; `postgresql://...` a
psycopg connection to the store's database (tenure's tables live in their own schema).
SQL is written once with `%s` placeholders.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS customers ("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounts ("
    " id INTEGER PRIMARY KEY, export_credits INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS exports ("
    " id TEXT PRIMARY KEY, account_id INTEGER NOT NULL, lo INTEGER NOT NULL,"
    " hi INTEGER NOT NULL, status TEXT NOT NULL, batch_id TEXT, rows INTEGER, csv TEXT)",
    # one line per exported customer, keyed by batch: a re-run of a range writes nothing twice
    "CREATE TABLE IF NOT EXISTS export_lines ("
    " batch_id TEXT NOT NULL, customer_id INTEGER NOT NULL, line TEXT NOT NULL,"
    " PRIMARY KEY (batch_id, customer_id))",
]


class Db:
    """A DB-API connection with one placeholder style; `.raw` is what `conn=` takes."""

    def __init__(self, url: str) -> None:
        if url.startswith("sqlite:///"):
            self.raw: Any = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
            self.sqlite = True
        elif url.startswith(("postgresql://", "postgres://")):
            import psycopg

            self.raw = psycopg.connect(_without_schema(url))
            self.sqlite = False
        else:
            raise ValueError(f"unsupported database URL {url!r}")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(sql.replace("%s", "?") if self.sqlite else sql, params)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self.execute(sql, params).fetchall())

    def commit(self) -> None:
        self.raw.commit()

    def close(self) -> None:
        self.raw.close()


@contextmanager
def connect(url: str) -> Iterator[Db]:
    db = Db(url)
    try:
        yield db
    finally:
        db.close()


@contextmanager
def transaction(url: str) -> Iterator[Db]:
    """Commit when the block ends, roll back when it raises: the jobs enqueued with
    `conn=db.raw` inside it share that fate."""
    with connect(url) as db:
        try:
            yield db
        except BaseException:
            db.raw.rollback()
            raise
        db.commit()


def create_schema(url: str) -> None:
    with transaction(url) as db:
        for statement in SCHEMA:
            db.execute(statement)


def seed(url: str, *, customers: int, credits: int, account_id: int = 1) -> None:
    """Customers 1..N and one account with some export credits (idempotent)."""
    with transaction(url) as db:
        for i in range(1, customers + 1):
            db.execute(
                "INSERT INTO customers (id, name, email) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (i, f"Customer {i}", f"customer{i}@example.com"),
            )
        db.execute(
            "INSERT INTO accounts (id, export_credits) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (account_id, credits),
        )


def _without_schema(url: str) -> str:
    """tenure's `?schema=` is not a libpq parameter."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode(query)))

"""What the conformance suite does behind a store's back, written once per backend: open the
application's own connection to the store's database, overwrite stored fields as a bad
migration or a person might. The suite reads these and `store.capabilities`, never a
backend's name; each backend's kit lives in its own package here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol


class Kit(Protocol):
    # What a damaged record can hold in this backend's storage (typed columns hold less).
    damaged_batch: Mapping[str, str]
    unreadable_callbacks: Mapping[str, str]
    counts_can_be_damaged: bool
    # Statements a job runs on its transaction's connection after committing it itself: land
    # one by one (autocommit) or are held in a transaction tenure rolls back.
    statements_after_its_own_commit_land: bool
    # What `conn=` with a connection to some other SQLite file is refused with.
    foreign_connection_refusal: str

    def app_connection(self, *, autocommit: bool = False) -> Any:
        """The application's own DB-API connection to the store's database."""

    def app_table(self, name: str) -> str:
        """A table of the application's, named as its SQL must spell it."""

    placeholder: str

    def damage_job(self, job_id: str, field: str, value: str) -> int:
        """Overwrite one stored field of a job; how many records were changed."""

    def damage_batch(self, batch_id: str, fields: Mapping[str, str]) -> None: ...

    def stored_job_field(self, job_id: str, field: str) -> str | None:
        """One field of a job as stored, read raw (what is at rest), None when empty."""


def foreign_connection(directory: Path) -> Any:
    """A DB-API connection to some other database (a new SQLite file): what `conn=` must
    refuse on every store."""
    import sqlite3

    return sqlite3.connect(directory / "elsewhere.db")


def kit_for(store_url: str) -> Kit:
    scheme = store_url.split(":", 1)[0]
    if scheme == "sqlite":
        from backends.sqlite.kit import SQLiteKit

        return SQLiteKit(store_url)
    if scheme == "postgresql":
        from backends.postgres.kit import PostgresKit

        return PostgresKit(store_url)
    from backends.redis.kit import RedisKit

    return RedisKit(store_url)

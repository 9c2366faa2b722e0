"""The conformance suite's hands behind a PostgreSQL store: psycopg, in the store's schema."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from tenure.stores.postgres import PostgresStore
from tenure.stores.postgres.database import parse_url

from servers import isolated_store_url


class PostgresKit:
    # Types and CHECK constraints leave only the callbacks text to damage.
    damaged_batch: Mapping[str, str] = {"callbacks": "{not json"}
    unreadable_callbacks: Mapping[str, str] = {"callbacks": "{not json"}
    counts_can_be_damaged = False
    statements_after_its_own_commit_land = False
    foreign_connection_refusal = "psycopg"
    placeholder = "%s"

    def __init__(self, store_url: str) -> None:
        self.conninfo, self.schema = parse_url(store_url)

    def app_connection(self, *, autocommit: bool = False) -> Any:
        return psycopg.connect(self.conninfo, autocommit=autocommit)

    def app_table(self, name: str) -> str:
        return f'"{self.schema}".{name}'

    def damage_job(self, job_id: str, field: str, value: str) -> int:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            sql = f"UPDATE {self.app_table('tenure_jobs')} SET {field} = %s WHERE id = %s"
            return conn.execute(sql.encode(), (value, job_id)).rowcount

    def stored_job_field(self, job_id: str, field: str) -> str | None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            sql = f"SELECT {field} FROM {self.app_table('tenure_jobs')} WHERE id = %s"
            row = conn.execute(sql.encode(), (job_id,)).fetchone()
            return None if row is None or row[0] is None else str(row[0])

    def damage_batch(self, batch_id: str, fields: Mapping[str, str]) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            for field, value in fields.items():
                sql = f"UPDATE {self.app_table('tenure_batches')} SET {field} = %s WHERE id = %s"
                conn.execute(sql.encode(), (value, batch_id))


def create_schema_at_version(conn: psycopg.Connection[Any], schema: str, version: int) -> None:
    """Bring a new schema to migration `version` (and no further), as an older tenure left it,
    so that a test can fill it and watch the later migrations upgrade it."""
    from tenure.stores.postgres.schema import migrations

    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(
        f'CREATE TABLE "{schema}".tenure_schema_version (version integer PRIMARY KEY,'
        " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for step in migrations()[:version]:
        conn.execute(step.sql.replace("{s}", f'"{schema}"').encode())
        conn.execute(
            f'INSERT INTO "{schema}".tenure_schema_version (version, name) VALUES (%s, %s)',
            (step.version, step.name),
        )


@contextlib.contextmanager
def upgraded_from(
    base_url: str, version: int, fill: str, params: Sequence[Any] = ()
) -> Iterator[PostgresStore]:
    """A schema of its own at migration `version`, filled by the statement `fill` ({s}: the
    schema), then upgraded by the code of now to the latest (twice: migrating is idempotent);
    the store is closed and the schema dropped afterwards."""
    from tenure.stores.postgres.schema import migrations

    with isolated_store_url("postgres", base_url, Path(".")) as url:
        conninfo, schema = parse_url(url)
        with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
            create_schema_at_version(conn, schema, version)
            conn.execute(fill.replace("{s}", f'"{schema}"').encode(), params)
        store = PostgresStore(url)
        try:
            store.migrate()
            store.migrate()  # idempotent
            assert store.db.schema_version() == len(migrations()) > version
            yield store
        finally:
            store.close()

"""PostgreSQL's numbered migrations (`migrations/NNNN_name.sql`; `{s}` in them stands for the
quoted schema name), applied in order, each once; the version is kept in
`tenure_schema_version` (see database.py)."""

from __future__ import annotations

from importlib import resources

from tenure.stores.sql.migrations import Migration, load_migrations


def migrations() -> list[Migration]:
    folder = resources.files("tenure.stores.postgres").joinpath("migrations")
    return load_migrations(folder, store="PostgreSQL")


__all__ = ["Migration", "migrations"]

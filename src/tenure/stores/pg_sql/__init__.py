"""PostgreSQL's numbered migrations (`NNNN_name.sql` here; `{s}` in them stands for the quoted
schema name), applied in order, each once; the version is kept in `tenure_schema_version`."""

from __future__ import annotations

from importlib import resources

from tenure.stores.sql.migrations import Migration, load_migrations


def migrations() -> list[Migration]:
    return load_migrations(resources.files(__name__), store="PostgreSQL")


__all__ = ["Migration", "migrations"]

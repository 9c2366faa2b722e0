"""Versioned PostgreSQL migrations: `NNNN_name.sql` files applied in order, each once.

A released file is never edited; a schema change is a new file with the next number, so every
database can say which version it is at (`tenure_schema_version`) and be brought forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str  # `{s}` stands for the quoted schema name


def migrations() -> list[Migration]:
    found: list[Migration] = []
    for entry in resources.files(__name__).iterdir():
        stem, dot, ext = entry.name.partition(".")
        number, _, name = stem.partition("_")
        if ext != "sql" or not dot or not number.isdigit():
            continue
        found.append(Migration(int(number), name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"tenure's PostgreSQL migrations are not numbered 1..n: {versions}")
    return found

"""Numbered migrations: `NNNN_name.sql` files applied in order, each once.

A released file is never edited; a schema change is a new file with the next number, so every
database can say which version it is at and be brought forward from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources.abc import Traversable


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(folder: Traversable, *, store: str) -> list[Migration]:
    """Every `NNNN_name.sql` in `folder`, in order; numbered 1..n without a gap or a repeat."""
    found: list[Migration] = []
    for entry in folder.iterdir():
        stem, dot, ext = entry.name.partition(".")
        number, _, name = stem.partition("_")
        if ext != "sql" or not dot or not number.isdigit():
            continue
        found.append(Migration(int(number), name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"tenure's {store} migrations are not numbered 1..n: {versions}")
    return found

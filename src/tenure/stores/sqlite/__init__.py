"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host (store.py), over its connections and clock (connection.py) and numbered migrations
(schema.py, migrations/NNNN_*.sql)."""

from tenure.stores.sqlite.connection import sqlite_path
from tenure.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore", "sqlite_path"]

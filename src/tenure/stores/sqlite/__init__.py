"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host. The store (store.py) over the job's hot path (jobs.py), its connections and clock
(database.py) and numbered migrations (schema.py, migrations/NNNN_*.sql)."""

from tenure.stores.sqlite.database import sqlite_path
from tenure.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore", "sqlite_path"]

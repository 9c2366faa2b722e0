"""The embedded default: one SQLite file in WAL mode, safe for several worker processes on one
host. The store (store.py) holds its database as `db` (database.py: connections and clock) and
inherits the job's hot path (jobs.py); numbered migrations are schema.py, migrations/NNNN_*.sql."""

from tenure.stores.sqlite.database import sqlite_path
from tenure.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore", "sqlite_path"]

"""`postgresql://user@host/db?schema=NAME`: FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY wake-ups and
the server's now() as the clock. The store (store.py) over its pool and LISTEN connection
(database.py), numbered migrations (schema.py, migrations/NNNN_*.sql), reads and operations,
batches, guards, claims, and the application's transactions (transaction.py)."""

from tenure.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]

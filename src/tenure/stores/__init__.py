"""Backends behind the one Store interface; the URL's scheme picks one.

Every backend package names its files alike where they do the same job, so a reader who knows
one knows all (`-` where the engine has no such file; `sql/` is what SQLite and PostgreSQL share):

    file            job                                        sqlite  postgres  redis  sql
    store.py        the Store class: the verbs off the hot path   x       x        x     x
    jobs.py         the hot path: enqueue, reserve, end_attempt   x       x        x     -
    database.py     connections, clock, transactions, the URL     x       x        x     -
    inserts.py      the one insert every enqueue path shares      x       x        -     -
    dialect.py      the engine as the shared SQL code sees it     x       x        -     x
    guards.py       uniqueness, overlap, rate limits, once()      x       x        x     x
    schema.py       numbered migrations (migrations/NNNN_*.sql)   x       x        -     -
    transaction.py  a job's writes with its end (ctx.transaction) x       x        -     -
    batches.py, periodic.py, operations.py: in sql/ for the SQL stores, in redis/ for Redis.

What only one engine has keeps its own name: sqlite/wake.py (inotify wake-ups),
postgres/claims.py (the claim statements) and waiters.py (pruning waiter rows),
redis/connection.py (opening each topology from its URL), cluster.py, scripts.py and lua/,
functions.py, and records.py (hashes read back into records, as sql/rows.py reads rows).

A store is assembled one way: it holds its database as `self.db` (SQLiteDatabase, Database,
RedisDatabase: the connection, the clock, the transactions or scripts), which every part reaches
through, and inherits its verbs in parts over its engine's hot path: `SQLiteStore(SQLiteJobs,
SQLStore)` and `PostgresStore(PostgresJobs, SQLStore)`, the shared SQL verbs mixed in;
`RedisStore(RedisJobs, RedisGuards, RedisPeriodic, RedisOperations)`, its verbs by job. The parts
are inherited, not held, so the hot path pays no forwarding call.
"""

from __future__ import annotations

from tenure.core.errors import ConfigError
from tenure.extras import install_line
from tenure.stores import url_options
from tenure.stores.base import Capabilities, Store


def store_class(url: str) -> type[Store]:
    """The backend a URL names, not yet opened: its `capabilities` can be read without a
    connection (App checks job definitions against them at import time)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from tenure.stores.sqlite import SQLiteStore

        return SQLiteStore
    if scheme in ("postgresql", "postgres"):
        try:
            from tenure.stores.postgres import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                f"{url.split('@')[-1]}: the PostgreSQL store needs psycopg: "
                f"{install_line('postgres')}"
            ) from exc
        return PostgresStore
    if scheme in ("redis", "rediss", "redis+sentinel", "redis+cluster"):
        try:
            from tenure.stores.redis import RedisClusterStore, RedisStore
        except ImportError as exc:
            raise ConfigError(f"the Redis store needs redis-py: {install_line('redis')}") from exc
        return RedisClusterStore if scheme == "redis+cluster" else RedisStore
    raise ConfigError(
        "store URL: expected sqlite:///PATH, postgresql://..., redis://..., "
        f"redis+cluster://... or redis+sentinel://..., got {url!r}"
    )


def open_store(url: str) -> Store:
    kind = store_class(url)
    url_options.check(url)  # a mistyped ?option is a clear error, not a driver's TypeError
    return kind(url)


__all__ = ["Capabilities", "Store", "open_store", "store_class"]

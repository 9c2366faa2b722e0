"""Backends behind the one Store interface; the URL's scheme picks one."""

from __future__ import annotations

from tenure.core.errors import ConfigError
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
                "pip install 'tenure[postgres]'"
            ) from exc
        return PostgresStore
    if scheme in ("redis", "rediss", "redis+sentinel", "redis+cluster"):
        try:
            from tenure.stores.redis import RedisClusterStore, RedisStore
        except ImportError as exc:
            raise ConfigError(
                "the Redis store needs redis-py: pip install 'tenure[redis]'"
            ) from exc
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

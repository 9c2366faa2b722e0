"""Backends behind the one Store interface; the URL's scheme picks one."""

from __future__ import annotations

from tenure.errors import ConfigError
from tenure.stores.base import Store


def open_store(url: str) -> Store:
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from tenure.stores.sqlite import SQLiteStore

        return SQLiteStore(url)
    if scheme in ("postgresql", "postgres"):
        try:
            from tenure.stores.postgres import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                f"{url.split('@')[-1]}: the PostgreSQL store needs psycopg: "
                "pip install 'tenure[postgres]'"
            ) from exc
        return PostgresStore(url)
    if scheme in ("redis", "rediss"):
        try:
            from tenure.stores.redis import RedisStore
        except ImportError as exc:
            raise ConfigError(
                "the Redis store needs redis-py: pip install 'tenure[redis]'"
            ) from exc
        return RedisStore(url)
    raise ConfigError(
        f"store URL: expected sqlite:///PATH, postgresql://... or redis://..., got {url!r}"
    )


__all__ = ["Store", "open_store"]

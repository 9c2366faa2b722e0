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
            from tenure.stores.postgres import PostgresStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ConfigError(
                f"{url.split('@')[-1]}: the PostgreSQL store needs psycopg: "
                "pip install 'tenure[postgres]'"
            ) from exc
        return PostgresStore(url)  # type: ignore[no-any-return,return-value,unused-ignore]
    if scheme in ("redis", "rediss"):
        try:
            from tenure.stores.redis import RedisStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise ConfigError(
                "the Redis store needs redis-py: pip install 'tenure[redis]'"
            ) from exc
        return RedisStore(url)  # type: ignore[no-any-return,return-value,unused-ignore]
    raise ConfigError(
        f"store URL: expected sqlite:///PATH, postgresql://... or redis://..., got {url!r}"
    )


__all__ = ["Store", "open_store"]

"""The conformance suite's hands behind a Redis store: its hashes, found under its prefix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tenure.stores.redis import split_prefix

from servers import raw_redis


class RedisKit:
    # A hash holds any string in any field.
    damaged_batch: Mapping[str, str] = {
        "state": "bogus",
        "then.delay": "soon",
        "created_at": "x",
        "finished_at": "y",
    }
    unreadable_callbacks: Mapping[str, str] = {
        "then.id": "",
        "then.base": "elsewhere:{q:x}",
        "finally.delay": "x",
    }
    counts_can_be_damaged = True
    statements_after_its_own_commit_land = False  # no job transactions at all
    foreign_connection_refusal = ""  # conn= is refused whatever it is
    placeholder = ""

    def __init__(self, store_url: str) -> None:
        self.server_url, self.prefix = split_prefix(store_url)

    def app_connection(self, *, autocommit: bool = False) -> Any:
        raise AssertionError("Redis has no application database: check store.capabilities")

    def app_table(self, name: str) -> str:
        raise AssertionError("Redis has no application database: check store.capabilities")

    def _hset_all(self, pattern: str, fields: Mapping[str, str]) -> int:
        client = raw_redis(self.server_url)
        try:
            keys = list(client.scan_iter(match=f"{self.prefix}:{pattern}"))
            for key in keys:
                client.hset(key, mapping=dict(fields))
            return len(keys)
        finally:
            client.close()

    def damage_job(self, job_id: str, field: str, value: str) -> int:
        return self._hset_all(f"*:job:{job_id}", {field: value})

    def stored_job_field(self, job_id: str, field: str) -> str | None:
        client = raw_redis(self.server_url)
        try:
            for key in client.scan_iter(match=f"{self.prefix}:*:job:{job_id}"):
                value = client.hget(key, field)
                if isinstance(value, bytes):
                    return value.decode()
                return None if value is None else str(value)
            return None
        finally:
            client.close()

    def damage_batch(self, batch_id: str, fields: Mapping[str, str]) -> None:
        assert self._hset_all(f"*:batch:{batch_id}", fields) == 1

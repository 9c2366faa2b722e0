"""The Redis store's store-wide records (hash tag `{g}`): live workers. (Restart requests, in
the same slot: RedisStore.set_control.)"""

from __future__ import annotations

import json
from typing import cast

from tenure.stores.base import WorkerRecord
from tenure.stores.redis.client import Call, RedisClient
from tenure.stores.redis.records import worker_record


class RedisWorkers(RedisClient):
    def _worker_row(self, record: WorkerRecord) -> Call:
        """The write of a worker's row that `heartbeat` sends with a WorkerRecord."""
        key = self._global_key(f"worker:{record.id}")
        if record.stopped_at is not None:  # the worker stopping: its row, stamped now
            return (self._g["touch_worker"], [key], ["stopped_at"])
        return (
            self._g["register_worker"],
            [key, self._global_key("workers")],
            [
                record.id,
                record.host,
                record.pid,
                json.dumps(list(record.queues)),
                record.concurrency,
            ],
        )

    def list_workers(self) -> list[WorkerRecord]:
        ids = cast(list[str], self._redis.zrevrange(self._global_key("workers"), 0, -1))
        pipe = self._redis.pipeline(transaction=False)
        for worker_id in ids:
            pipe.hgetall(self._global_key(f"worker:{worker_id}"))
        out: list[WorkerRecord] = []
        for worker_id, fields in zip(ids, pipe.execute(), strict=True):
            if fields:
                out.append(worker_record(worker_id, fields))
        return out

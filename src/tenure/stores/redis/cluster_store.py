"""The Redis store on Redis Cluster (`redis+cluster://`): the same store, routed per slot
(cluster.py), with what one slot per script cannot do declared in its capabilities."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from tenure.stores.base import Capabilities
from tenure.stores.redis.store import RedisStore


class RedisClusterStore(RedisStore):
    # A batch's bookkeeping and its members' ends are one script, so they share one slot.
    capabilities: ClassVar[Capabilities] = replace(
        RedisStore.capabilities, batches_span_queues=False
    )

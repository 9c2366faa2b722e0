"""The throwaway servers the outage tests stop and start: data must survive a restart."""

from __future__ import annotations

import redis

from servers import ThrowawayRedis, redis_reachable


def test_a_throwaway_redis_restarts_on_its_port_with_its_data(
    throwaway_redis: ThrowawayRedis,
) -> None:
    client = redis.Redis.from_url(throwaway_redis.url)
    try:
        client.set("kept", "yes")
        throwaway_redis.stop()
        assert redis_reachable(throwaway_redis.url) is not None
        throwaway_redis.start()
        assert client.get("kept") == b"yes"  # redis-py reconnects by itself
    finally:
        client.close()

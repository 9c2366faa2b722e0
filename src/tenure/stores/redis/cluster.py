"""Running the Redis store's calls on Redis Cluster, where each key lives on one node.

Every tenure script touches one hash tag (a queue's `{q:NAME}` or the store-wide `{g}`), so
each runs whole on the node owning that slot. What spans several tags is several calls:

- **Pipelines of scripts.** redis-py's cluster pipeline refuses EVALSHA, so the calls are
  grouped by the node that owns their first key and each group is one plain pipeline on that
  node's connection. The groups run one after another, in the order of their first call: the
  first call of a batch (the queue registry write in enqueue_many, say) has landed before any
  later call starts, so a crash between them leaves at worst a registered empty queue, never
  a job in a queue the registry does not know.
- **A node that no longer owns the slot** (resharding, failover) answers MOVED/ASK/TRYAGAIN
  without running the script; that call is sent again through the cluster client, which
  follows the redirection and refreshes its map of slots.
- **Waiting on several queues.** BLPOP takes keys of one slot; queues in several slots are
  waited on in turn, WAIT_SLICE_S each, so a wake-up is seen within one slice per extra slot.

Clock: each script reads TIME on its own node, so a job's lease is written and checked by the
clock of the node that owns its queue, always the same one; `now()` asks the node of `{g}`.
Nodes on NTP agree to milliseconds; a lease is seconds.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from tenure.core.errors import StoreUnavailable
from tenure.stores.redis.connection import TranslatingPipeline, translating_pipeline
from tenure.stores.redis.functions import send

WAIT_SLICE_S = 0.1
# Replies that say the script did not run on this node: safe to send again elsewhere.
REDIRECTED = (redis.exceptions.AskError, redis.exceptions.TryAgainError)


def run_per_node(
    cluster: Any, where: str, calls: Sequence[Any], functions: Mapping[str, str]
) -> list[Any]:
    """Run each (script, keys, args) on its slot's node (FCALL of its function where
    `functions` names one, else EVALSHA): one pipeline per node, nodes in the order of their
    first call. Replies in call order; a call's error is its reply."""
    groups: dict[str, list[int]] = {}
    for i, (_, keys, _) in enumerate(calls):
        groups.setdefault(cluster.get_node_from_key(keys[0]).name, []).append(i)
    replies: list[Any] = [None] * len(calls)
    for name, indexes in groups.items():
        pipe = node_pipeline(cluster, where, name, transaction=False)
        for i in indexes:
            script, keys, args = calls[i]
            send(pipe, functions, script, keys, args)
        try:
            pipe_replies = pipe.execute(raise_on_error=False)
        except StoreUnavailable:
            # The node may be gone for good (a replica took over): learn the new map before
            # the worker's next try, which the cluster client would otherwise do only on its
            # own calls.
            _refresh(cluster)
            raise
        for i, reply in zip(indexes, pipe_replies, strict=True):
            replies[i] = reply
    return replies


def node_pipeline(
    cluster: Any, where: str, node_name: str, *, transaction: bool
) -> TranslatingPipeline:
    node = cluster.get_node(node_name=node_name)
    if node is None:  # the map changed under us: an outage until it is learned again
        _refresh(cluster)
        raise StoreUnavailable(f"cannot reach {where}: node {node_name} left the cluster")
    return translating_pipeline(cluster.get_redis_connection(node), where, transaction=transaction)


def _refresh(cluster: Any) -> None:
    with contextlib.suppress(Exception):
        cluster.nodes_manager.initialize()


def wait_on_slots(cluster: Any, keys: Sequence[str], wait: float) -> None:
    """BLPOP on `keys` for up to `wait` s, returning at the first token; keys of several
    slots are waited on in turn."""
    by_slot: dict[int, list[str]] = {}
    for key in keys:
        by_slot.setdefault(cluster.keyslot(key), []).append(key)
    groups = list(by_slot.values())
    if len(groups) <= 1:
        cluster.blpop(keys, timeout=round(wait, 3))
        return
    deadline = time.monotonic() + wait
    while True:
        for group in groups:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if cluster.blpop(group, timeout=round(max(0.01, min(WAIT_SLICE_S, left)), 3)):
                return

"""The Redis store's scripts as Redis 7 functions (FUNCTION LOAD, then FCALL), where the server
has them.

An EVALSHA call runs its script's whole text again: every prelude function the script reaches
is built anew as a closure on each call, which was a fifth to a third of the server's CPU for a
drained job (issue 32). A function library builds them once, when it is loaded. The libraries
(scripts.queue_library, scripts.global_library) and their functions are named by the hash of
their text, so two tenure versions on one server each run their own code, as SCRIPT LOAD's
SHA-1 names keep them apart.

Redis 6.2 has no functions, and a proxy or an ACL may refuse FUNCTION: there the scripts run by
EVALSHA, as before; so do they behind Sentinel for now (RedisDatabase._load_functions says why).
A server that lost its functions (a restart without persistence, FUNCTION FLUSH, a new cluster
node) answers "Function not found" without running anything, so the libraries are loaded again
and the call re-sent, as NOSCRIPT is for EVALSHA.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis
from redis.commands.core import Script

from tenure.core.errors import StoreMisconfigured
from tenure.stores.redis.connection import raise_translated
from tenure.stores.redis.scripts import global_library, queue_library

NOT_FOUND = "Function not found"


def missing(reply: Any) -> bool:
    """The reply of an FCALL whose function the server does not have (nothing ran)."""
    return isinstance(reply, redis.ResponseError) and NOT_FOUND in str(reply)


def load(client: Any, *, cluster: bool, where: str) -> bool:
    """FUNCTION LOAD both libraries (on a cluster, on every primary). False where the server has
    no functions or refuses FUNCTION: the caller keeps to EVALSHA."""
    targets = (
        [client.get_redis_connection(node) for node in client.get_primaries()]
        if cluster
        else [client]
    )
    try:
        for target in targets:
            for text, _ in (queue_library(), global_library()):
                _load_one(target, text)
    except (redis.ResponseError, StoreMisconfigured):
        return False
    except redis.RedisError as exc:  # a cluster node's own client: tenure's errors
        raise_translated(exc, where)
        raise
    return True


def _load_one(target: Any, text: str) -> None:
    try:
        target.function_load(text)
    except redis.ResponseError as exc:
        if "already exists" not in str(exc):  # the same text, loaded by another client
            raise


def names(queue: Mapping[str, Script], store_wide: Mapping[str, Script]) -> dict[str, str]:
    """Each script's SHA-1 -> the name of the function that runs the same body."""
    out = {queue[name].sha: fn for name, fn in queue_library()[1].items()}
    out.update({store_wide[name].sha: fn for name, fn in global_library()[1].items()})
    return out


def send(
    pipe: Any, functions: Mapping[str, str], script: Script, keys: list[str], args: list[Any]
) -> None:
    """Queue one script call on `pipe`: FCALL of its function where loaded, else EVALSHA."""
    name = functions.get(script.sha)
    if name is None:
        pipe.evalsha(script.sha, len(keys), *keys, *args)
    else:
        pipe.fcall(name, len(keys), *keys, *args)

"""Guards on Redis: uniqueness at enqueue, overlap and rate limits at reserve, once() claims.

Each check runs inside the Lua script of the change it guards (lua/lib/guards.lua), so it is
atomic with it: two dispatches of one unique key from any number of processes store one job,
and two workers can never both start a job of one overlap key.

Key layout (besides the queue keys listed in store.py); every guard key carries its queue's
hash tag, so each guard lives in its queue's Redis Cluster slot:

    PREFIX:{q:QUEUE}:uniq:KEY   hash  job (the holder's id), until, expires_at (unique_for)
    PREFIX:{q:QUEUE}:overlap    hash  overlap key -> the job that last started under it
    PREFIX:{q:QUEUE}:rate:KEY   zset  starts in the current window (expires when it is over)
    PREFIX:{q:QUEUE}:once:ID    hash  effect key -> "attempt at" for once(key)
    PREFIX:{q:QUEUE}:conc:KEY   set   the attempts running under a concurrency key
    PREFIX:{q:QUEUE}:parked:KEY list  the key's parked jobs, oldest first
    PREFIX:{q:QUEUE}:conc_keys  hash  concurrency key with parked jobs -> its limit
    PREFIX:{q:QUEUE}:debounce   hash  debounce key -> the job last created for it
    PREFIX:{q:QUEUE}:fair       hash  'k:' + fair key -> its next virtual start; '' -> largest

Locks are never released by hand. A unique key is held while its holder exists, is not past
`unique_for` and is queued (unique_until="processing") or not finished ("completed"). An
overlap key is held while the job that last started under it is running with a live lease; a
heartbeat cannot revive an expired lease, so a crashed holder blocks its key for one lease at
most. Forgetting a job drops its once() records and the guard entries it still holds.

Scope, and Redis Cluster
------------------------
Guard keys are per job name (tenure prefixes each key with it) *and per queue*: a job
dispatched to its own queue, as usual, is guarded exactly as on SQLite and PostgreSQL, on a
single server, Sentinel and Cluster alike. The same job dispatched to several queues (with
`.options(queue=...)`) has separate locks in each queue, since one script can only reach one
slot on a cluster; give such jobs one queue where the guard must span them. A rate window's key
carries a TTL, so a `volatile-*` eviction policy could forget recent starts under memory
pressure (use `noeviction`, as for everything else). Batch members, batch callbacks and a
chain's later links carry their overlap and rate guards (the batch scripts store them; a
callback's and a link's record keeps them until its turn, codec.guard_fields); uniqueness
does not apply to them, as on SQLite.

Transactional completion (`ctx.transaction()`) needs a SQL store: Redis cannot commit the
job's own writes with its completion, and `conn=` on dispatch cannot join an application's
database transaction; both raise ConfigError.
"""

from __future__ import annotations

import json

from tenure.core.codec import guard_fields
from tenure.core.errors import ConfigError
from tenure.core.records import EffectRecord, NewJob
from tenure.stores.base import JobTransaction
from tenure.stores.redis.database import RedisDatabase
from tenure.stores.redis.records import to_float, to_int


class RedisGuards:
    db: RedisDatabase  # the store's own (RedisStore sets it)

    def claim_once(self, *, job_id: str, token: int, key: str) -> bool:
        queue = self.db.locate(job_id)
        if queue is None:
            return False
        return bool(self.db.run(self.db.qcall("claim_once", queue, job_id, int(token), key)))

    def job_transaction(self, *, job_id: str, token: int) -> JobTransaction:
        raise ConfigError(
            "transactional completion needs PostgreSQL or SQLite: Redis cannot commit the "
            "job's own writes together with its completion"
        )


def member_guards(job: NewJob) -> str:
    """A batch member's overlap and rate guards (codec.guard_fields, as text), priority and
    chain, as the batch scripts store them ('' for none): the job-hash fields the reserve
    script reads. Uniqueness does not apply to batch members, as on SQLite."""
    fields = {k: v if isinstance(v, str) else repr(v) for k, v in guard_fields(job.guards).items()}
    if job.priority:
        fields["priority"] = str(int(job.priority))
    if job.chain is not None:  # a chain as one member: its first link carries the chain
        fields["chain"] = job.chain
    return json.dumps(fields) if fields else ""


def effect_records(fields: dict[str, str]) -> list[EffectRecord]:
    """once() records as the script stores them ("attempt at"), oldest first; a damaged value
    reads as attempt 0 at time 0 rather than hiding the claim."""
    out: list[EffectRecord] = []
    for key, value in fields.items():
        attempt, _, at = str(value).partition(" ")
        out.append(EffectRecord(key=key, attempt=to_int(attempt), at=to_float(at)))
    out.sort(key=lambda e: (e.at, e.key))
    return out

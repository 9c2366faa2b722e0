"""The Redis database under the store: the connection, key names, running Lua scripts, and
finding which queue holds a job. `RedisStore` (store.py) builds the Store protocol on top of it
(as postgres/database.py and sqlite/database.py are under theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from tenure.core.errors import ConfigError, StoreMisconfigured, StoreUnavailable
from tenure.core.guards import NO_GUARDS
from tenure.core.records import NewJob
from tenure.core.retention import Keep
from tenure.core.words import log_lost_callback
from tenure.stores.redis import cluster as on_cluster
from tenure.stores.redis import functions
from tenure.stores.redis.connection import SOCKET_TIMEOUT_S, connect
from tenure.stores.redis.scripts import (
    ENQUEUE_DEFAULTS,
    LOST_CALLBACKS_MARK,
    global_scripts,
    queue_scripts,
)

# The states whose jobs a per-queue index lists (layout 3: not queued and running, whose own
# zsets `queued` and `running` list them already).
INDEXED_STATES = ("succeeded", "failed", "cancelled")
# A queue script's KEYS, after the queue's base key: the one a cluster client routes the call by;
# the scripts name the queue's other keys from the base (prelude.lua), since every key sent costs
# the server more than naming it there (issue 32).
QUEUE_KEYS: tuple[str, ...] = ("queued",)
LIST_PAGE = 200

BLOCK_CAP_S = 10.0
# How long a write waits for wait_replicas= replicas to confirm it before it counts as failed.
WAIT_TIMEOUT_MS = 2000
# Redis reads a blocking timeout in milliseconds and treats 0 as "forever".
MIN_BLOCK_S = 0.01
JOB_CACHE_MAX = 100_000
# The key layout this code reads and writes, kept in PREFIX:{g}:meta `layout`; a layout change
# bumps it, so that an older tenure meeting newer keys stops instead of misreading them.
# 2: priorities (queued:pN zsets beside `queued`, which keeps priority 0): an older tenure
# would never see a job of another priority.
# 3: the hot path writes only what a reader needs (issue 32): no idx:queued / idx:running.
# 4: a job's ended attempts in its own hash (fields "N.outcome", ...), no att:ID hash: a
# success is one HSET, and no second key per job is made and deleted (issue 32).
# 5: no index of every job (`all`): an enqueue writes the job's hash and its queued zset only;
# the listing of all states merges the structures that hold each job once. A claim writes its
# attempt's own fields ("N.worker_id", ...), so an end reads none and adds two (issue 32).
# 6: a job's seq is the server's clock in microseconds, not a per-queue counter an enqueue
# INCRs (a command per job, issue 32). Nothing stored is rewritten: an older release's jobs
# keep their counter's numbers, all below the clock's. The mark is what matters: a release
# before it, which would number its new jobs below every newer one (listed as the oldest),
# stops instead.
# Older layouts are upgraded in place (UPGRADABLE_LAYOUTS): 1 and 2 by each queue's `upgrade`
# script, then 1-3 by `upgrade_attempts`, a page at a time (it pages over `all`), marked 4;
# then `upgrade_listing` drops `all` (1-4); marked 6. Each is idempotent, so two processes
# upgrading at once, or one run again after a stop, do no harm.
LAYOUT_VERSION = 6
UPGRADABLE_LAYOUTS = ("1", "2", "3", "4", "5")
# Jobs per call of upgrade_attempts: each call is atomic, so a page bounds how long it holds
# the server.
UPGRADE_PAGE = 500

Call = tuple[Script, list[str], list[Any]]


class RedisDatabase:
    """One store's connection and what it reads through it: the store holds it as `db` (as
    PostgresStore holds its Database) and its parts reach Redis only through it."""

    def __init__(self, url: str) -> None:
        self.url = url
        opened = connect(url)
        self.client: Any = opened.client  # redis.Redis, or RedisCluster on a cluster
        self.prefix, self._where, self.cluster = opened.prefix, opened.where, opened.cluster
        self._wait_replicas, self._sentinel = opened.wait_replicas, opened.sentinel
        # BLPOP must return before the socket timeout fires, or the wait would look like an
        # outage; a URL may set a shorter socket_timeout.
        socket_timeout = SOCKET_TIMEOUT_S
        if not self.cluster:
            kwargs = self.client.connection_pool.connection_kwargs
            socket_timeout = kwargs.get("socket_timeout") or SOCKET_TIMEOUT_S
        self.block_cap = BLOCK_CAP_S
        if isinstance(socket_timeout, int | float) and socket_timeout > 0:
            self.block_cap = max(MIN_BLOCK_S, min(BLOCK_CAP_S, float(socket_timeout) * 0.66))
        # the scripts by name: q, a queue's (run with qcall); g, the store-wide ones
        self.q = {name: self.client.register_script(s) for name, s in queue_scripts().items()}
        self.g = {name: self.client.register_script(s) for name, s in global_scripts().items()}
        # script SHA-1 -> its Redis 7 function, once the libraries are loaded (check_layout);
        # empty: every script runs by EVALSHA (Redis 6.2, FUNCTION refused)
        self._functions: dict[str, str] = {}
        # job id -> queue. Ids are unique and a job never changes queue, so an entry is either
        # right or names a job that no longer exists anywhere.
        self.job_queue: dict[str, str] = {}
        self.registered_queues: set[str] = set()  # by this client, in the queue registry
        # queue -> (monotonic time, server now, earliest future run_at or None) as the last
        # reserve that found nothing there answered it (reserve.lua): the wait that follows
        # sleeps by it instead of asking the server again (RedisJobs.wait_for_work)
        self.idle: dict[str, tuple[float, float, float | None]] = {}
        self._layout_checked = False

    # -- keys ----------------------------------------------------------------------------
    def global_key(self, name: str) -> str:
        return f"{self.prefix}:{{g}}:{name}"

    def base(self, queue: str) -> str:
        # The queue name made safe inside a hash tag: a brace would end the tag early and let
        # one queue's keys spell another's; '%' is escaped too so two names never encode alike.
        quoted = queue.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")
        return f"{self.prefix}:{{q:{quoted}}}"

    def _queue_keys(self, queue: str) -> list[str]:
        base = self.base(queue)
        return [f"{base}:{name}" for name in QUEUE_KEYS]

    def key_pattern(self) -> str:
        """A SCAN MATCH pattern for every key of this prefix and no other prefix's."""
        return "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix) + ":{*"

    # -- running scripts -----------------------------------------------------------------
    def qcall(self, script: str, queue: str, *args: Any) -> Call:
        return (self.q[script], self._queue_keys(queue), [self.base(queue), queue, *args])

    def run(self, call: Call) -> Any:
        if not self._layout_checked:
            self.check_layout()
        if self._wait_replicas:  # the script and its WAIT on one connection
            return self.run_many([call])[0]
        script, keys, args = call
        name = self._functions.get(script.sha)
        if name is None:
            return _logged(script(keys=keys, args=args, client=self.client))
        try:
            return _logged(self.client.fcall(name, len(keys), *keys, *args))
        except redis.ResponseError as exc:
            if not functions.missing(exc):
                raise
        return self.run_many([call])[0]  # loads the libraries again, then runs it

    def run_many(self, calls: Sequence[Call]) -> list[Any]:
        """Run scripts in one round trip; a script the server forgot is loaded and re-run."""
        if not calls:
            return []
        if not self._layout_checked:
            self.check_layout()
        results = self._send_scripts(calls)
        for i, result in enumerate(results):
            if functions.missing(result):  # nothing ran: load the libraries and send it again
                self._load_functions()
                result = results[i] = self._send_scripts([calls[i]])[0]
                if functions.missing(result):  # still absent on that node: EVALSHA from now on
                    self._functions = {}
                    result = results[i] = self._send_scripts([calls[i]])[0]
            # NOSCRIPT means that script did not run at all (Redis restarted or SCRIPT FLUSH),
            # so running it again cannot apply anything twice; nor did a cluster node that
            # redirected it (the cluster client follows the redirection).
            if not isinstance(result, (NoScriptError, *on_cluster.REDIRECTED)):
                continue
            if not self._wait_replicas:  # redis-py's Script loads what the server forgot
                results[i] = self.run(calls[i])
                continue
            calls[i][0].sha = self.client.script_load(calls[i][0].script)
            results[i] = self._send_scripts([calls[i]])[0]
        for result in results:
            if isinstance(result, Exception):
                raise result
        return [_logged(result) for result in results]

    def _send_scripts(self, calls: Sequence[Call]) -> list[Any]:
        if self.cluster:
            return on_cluster.run_per_node(self.client, self._where, calls, self._functions)
        pipe = self.client.pipeline(transaction=False)
        for script, keys, args in calls:
            functions.send(pipe, self._functions, script, keys, args)
        if self._wait_replicas:
            pipe.execute_command("WAIT", self._wait_replicas, WAIT_TIMEOUT_MS)
        results = cast(list[Any], pipe.execute(raise_on_error=False))
        if not self._wait_replicas:
            return results
        # Refuse a write the replicas did not confirm: a failover may undo it, so the caller
        # must not rely on it (an enqueue or an end is retried, a claim is not run).
        confirmed = results.pop()
        if isinstance(confirmed, int) and confirmed >= self._wait_replicas:
            return results
        if self._sentinel:
            # A master that is no longer confirmed by its replica has likely just been failed
            # over: the next connections ask the Sentinels again instead of reusing this one.
            self.client.connection_pool.disconnect()
        raise StoreUnavailable(
            f"{self._where}: {confirmed} of wait_replicas={self._wait_replicas} replica(s) "
            f"confirmed the write within {WAIT_TIMEOUT_MS} ms; a failover could undo it, so it "
            "counts as not done (the caller retries)"
        )

    def _load_functions(self) -> None:
        # Not behind Sentinel yet: with FCALL, chaos `sentinel-failover` left the new master
        # without a confirming replica for ~20 s after a failover (writes refused by WAIT, 350
        # of 1,500 jobs dispatched twice), in 2 runs of 2; with EVALSHA, 0 (issue 32, open).
        if self._sentinel:
            self._functions = {}
            return
        loaded = functions.load(self.client, cluster=self.cluster, where=self._where)
        self._functions = functions.names(self.q, self.g) if loaded else {}

    def slot_transaction(self, key: str) -> Any:
        """A MULTI/EXEC pipeline for reads of `key`'s slot (and TIME) in one consistent view; on a
        cluster, on the node owning `key`, which redis-py's cluster pipeline cannot give."""
        if self.cluster:
            node = self.client.get_node_from_key(key).name
            return on_cluster.node_pipeline(self.client, self._where, node, transaction=True)
        return self.client.pipeline(transaction=True)

    def hashes(self, keys: Sequence[str]) -> list[dict[str, str]]:
        """HGETALL of each key in one round trip ({} for a key that does not exist)."""
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        return cast(list[dict[str, str]], pipe.execute()) if keys else []

    def hash_fields(self, keys: Sequence[str], names: Sequence[str]) -> list[dict[str, str] | None]:
        """HMGET of `names` from each key in one round trip, as {name: value} without the
        fields a hash lacks; None for a key that does not exist. A hash holding none of
        `names` (damaged) reads as {}, as HGETALL would show it present: one EXISTS round
        trip for such rows, none when every hash had a field asked for."""
        sent = [name.encode() for name in names]  # packed as they are; a str, encoded per key
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, sent)
        rows = cast(list[list[str | None]], pipe.execute()) if keys else []
        out: list[dict[str, str] | None] = [
            {name: value for name, value in zip(names, row, strict=True) if value is not None}
            for row in rows
        ]
        blank = [at for at, fields in enumerate(out) if not fields]
        if blank:
            pipe = self.client.pipeline(transaction=False)
            for at in blank:
                pipe.exists(keys[at])
            for at, there in zip(blank, pipe.execute(), strict=True):
                out[at] = {} if there else None
        return out

    def wait_for_token(self, keys: Sequence[str], wait: float) -> None:
        """Block on the notify lists `keys` for up to `wait` s (a BLPOP)."""
        if self.cluster:
            on_cluster.wait_on_slots(self.client, keys, wait)
        else:
            self.client.blpop(list(keys), timeout=round(wait, 3))

    def close(self) -> None:
        self.client.close()
        if not self.cluster:
            self.client.connection_pool.disconnect()

    def check_layout(self) -> None:
        """Record the key layout on first use, or refuse keys written in another one: every
        change of state goes through a script, so no write happens before this check."""
        try:
            info = {} if self.cluster else self.client.info("cluster")
        except redis.ResponseError:  # a proxy or managed service that hides INFO
            info = {}
        if str(info.get("cluster_enabled", "0")) == "1":
            raise StoreMisconfigured(
                f"Redis at {self._where} is a node of a Redis Cluster: a redis:// URL reaches "
                "one node only; use redis+cluster://HOST:PORT[,HOST:PORT...]/0"
            )
        meta = self.global_key("meta")
        pipe = self.client.pipeline(transaction=False)
        pipe.hsetnx(meta, "layout", LAYOUT_VERSION)
        pipe.hget(meta, "layout")
        found = str(pipe.execute()[1])
        if not found.isdigit():
            raise ConfigError(
                f"the keys under prefix {self.prefix!r}: {meta} field layout expected a "
                f"number, got {found!r}; they were edited by hand or are not tenure's"
            )
        if int(found) > LAYOUT_VERSION:
            raise ConfigError(
                f"the keys under prefix {self.prefix!r} use layout {found}, newer than this "
                f"tenure understands ({LAYOUT_VERSION}); upgrade tenure on this host"
            )
        self._load_functions()
        if found in UPGRADABLE_LAYOUTS:
            self._upgrade(meta, found)
        self._layout_checked = True

    def _upgrade(self, meta: str, found: str) -> None:
        """Bring older keys to this layout in place, one queue's script at a time (each atomic,
        each idempotent), and mark the layout only once every queue is done: a process that
        stops half way leaves the old mark, and the next start finishes the work."""
        self._layout_checked = True  # the upgrade's own scripts run through _run_many
        try:
            queues = self.queues()
            if found in ("1", "2"):
                self.run_many([self.qcall("upgrade", queue) for queue in queues])
            if found in ("1", "2", "3"):
                # before `all` goes: this step pages over it; a stop after the mark finds 4
                self.upgrade_attempts(queues)
                self.client.hset(meta, "layout", 4)
            if found != "5":
                self.run_many([self.qcall("upgrade_listing", queue) for queue in queues])
        except BaseException:
            self._layout_checked = False
            raise
        self.client.hset(meta, "layout", LAYOUT_VERSION)

    def upgrade_attempts(self, queues: Sequence[str]) -> int:
        """Layout 3 to 4: every queue's ended attempts into their jobs' hashes, a page of each
        queue per round trip until all are done; how many attempts hashes were moved."""
        after = dict.fromkeys(queues, "-inf")
        page = UPGRADE_PAGE
        moved = 0
        while after:
            calls = [self.qcall("upgrade_attempts", q, last, page) for q, last in after.items()]
            for queue, (count, last) in zip(list(after), self.run_many(calls), strict=True):
                moved += int(count)
                if last:
                    after[queue] = str(last)
                else:
                    del after[queue]
        return moved

    # -- finding a job's queue -----------------------------------------------------------
    def queues(self) -> list[str]:
        return sorted(cast(set[str], self.client.smembers(self.global_key("queues"))))

    def remember(self, job_id: str, queue: str) -> None:
        if len(self.job_queue) >= JOB_CACHE_MAX:
            self.job_queue.clear()
        self.job_queue[job_id] = queue

    def locate(self, job_id: str) -> str | None:
        return self.locate_many([job_id]).get(job_id)

    def locate_many(self, job_ids: Sequence[str]) -> dict[str, str]:
        """Which queue holds each job: from the cache, else by asking every queue at once."""
        # .get, not `in` then [ ]: another thread may clear the cache in between.
        found = {j: q for j in job_ids if (q := self.job_queue.get(j)) is not None}
        missing = [j for j in dict.fromkeys(job_ids) if j not in found]
        queues = self.queues() if missing else []
        probes = [(j, q) for j in missing for q in queues]
        if not probes:
            return found
        pipe = self.client.pipeline(transaction=False)
        for job_id, queue in probes:
            pipe.exists(f"{self.base(queue)}:job:{job_id}")
        for (job_id, queue), exists in zip(probes, pipe.execute(), strict=True):
            if exists and job_id not in found:
                found[job_id] = queue
                self.remember(job_id, queue)
        return found


# -- key helpers -------------------------------------------------------------------------
def _logged(reply: Any) -> Any:
    """A script's own reply, once the callbacks it could not enqueue are logged (a queue script
    that lost some wraps its reply: [LOST_CALLBACKS_MARK, [[batch id, kind], ...], reply])."""
    if type(reply) is list and len(reply) == 3 and reply[0] == LOST_CALLBACKS_MARK:
        for batch_id, kind in reply[1]:
            log_lost_callback(str(batch_id), str(kind))
        return reply[2]
    return reply


def clock_value(seconds: int, micros: int) -> float:
    # The same text-then-float path the scripts use, so Python and Lua agree to the bit.
    return float(f"{int(seconds)}.{int(micros):06d}")


def optional(value: str | None) -> str:
    """How a script receives an optional string: '-' for none, '+text' otherwise."""
    return "-" if value is None else "+" + value


def enqueue_args(job: NewJob) -> list[Any]:
    """One job's ARGV group for the enqueue script (lib/enqueue.lua): how many fields follow,
    then its fields in scripts.ENQUEUE_ORDER up to the last one that is not at its default. A
    guard's value goes only with its key (else its default), so an unguarded job's group ends
    after its priority: each argument costs the server work (issue 32)."""
    g = job.guards
    rate = g.rate_key if g.rate_limit is not None and g.rate_window else None
    slots = g.concurrency_key if g.concurrency_limit is not None else None
    fair = g.fair_key if job.delay <= 0 else None
    fields = [
        job.id,
        job.name,
        job.payload,
        job.policy.text,
        repr(float(job.delay)),
        *keep_args(job.keep),
        str(int(job.priority)),
        optional(job.batch_id),
        optional(job.chain),
        optional(g.unique_key),
        g.unique_until if g.unique_key is not None else "",
        optional(None if g.unique_for is None else repr(float(g.unique_for))),
        optional(g.overlap_key),
        repr(float(g.overlap_delay)) if g.overlap_key is not None else "0.0",
        optional(rate),
        str(int(g.rate_limit or 0)) if rate is not None else "0",
        repr(float(g.rate_window or 0.0)) if rate is not None else "0.0",
        optional(slots),
        str(int(g.concurrency_limit or 0)) if slots is not None else "0",
        optional(g.debounce_key),
        optional(fair),
        repr(float(g.fair_weight)) if fair is not None else "1.0",
    ]
    sent = len(fields)
    while sent > 1 and fields[sent - 1] == ENQUEUE_DEFAULTS[sent - 1]:
        sent -= 1
    return [sent, *fields[:sent]]


def plain(job: NewJob) -> bool:
    """Whether enqueue_plain.lua may create `job`: no guard of any kind (its definition declared
    none, so its guards are the shared NO_GUARDS: decided once per job definition, not looked
    into per dispatch), no batch and no chain."""
    return job.guards is NO_GUARDS and job.batch_id is None and job.chain is None


def plain_args(job: NewJob) -> tuple[Any, ...]:
    """A plain job's PLAIN_FIELDS for enqueue_plain.lua: a keep of '' is forever; a delay of '0'
    is now."""
    keep = job.keep
    return (
        job.id,
        job.name,
        job.payload,
        job.policy.text,
        "" if keep.succeeded is None else repr(float(keep.succeeded)),
        "" if keep.failed is None else repr(float(keep.failed)),
        "0" if job.delay <= 0 else repr(float(job.delay)),
        str(int(job.priority)) if job.priority else "0",
    )


# A plain group's last fields, delay and priority, whose default ('0') enqueue_plain.lua assumes
# when the call's last group stops before them.
PLAIN_DEFAULTED = 2


def trim_plain(args: list[Any]) -> list[Any]:
    """A call's plain groups (plain_args), the last one stopped at its last field not at its
    default: the usual dispatch, one job now with no priority, is then two arguments shorter."""
    for _ in range(PLAIN_DEFAULTED):
        if args[-1] != "0":
            break
        args.pop()
    return args


def keep_args(keep: Keep) -> list[str]:
    """A job's or batch's retention as the scripts read it: '-' (forever) or '+seconds'."""
    return [
        optional(None if seconds is None else repr(float(seconds)))
        for seconds in (keep.succeeded, keep.failed)
    ]

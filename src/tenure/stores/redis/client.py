"""The Redis store's plumbing: the connection, key names, running Lua scripts, and finding
which queue holds a job. `RedisStore` (store.py) builds the Store protocol on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.commands.core import Script
from redis.exceptions import NoScriptError
from redis.retry import Retry

from tenure.errors import ConfigError, StoreMisconfigured, StoreUnavailable
from tenure.stores.redis.scripts import global_scripts, queue_scripts

DEFAULT_PREFIX = "tenure"
STORED_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
LIST_PAGE = 200

# BLPOP must return before the socket timeout fires, or the wait would look like an outage.
SOCKET_TIMEOUT_S = 15.0
BLOCK_CAP_S = 10.0
# Redis reads a blocking timeout in milliseconds and treats 0 as "forever".
MIN_BLOCK_S = 0.01
JOB_CACHE_MAX = 100_000
# The key layout this code reads and writes, kept in PREFIX:{g}:meta `layout`; a layout change
# bumps it, so that an older tenure meeting newer keys stops instead of misreading them.
LAYOUT_VERSION = 1

Call = tuple[Script, list[str], list[Any]]


class RedisClient:
    def __init__(self, url: str) -> None:
        self.url = url
        connect_url, self.prefix = split_prefix(url)
        where = urlsplit(connect_url).netloc.rpartition("@")[2] or "localhost"
        try:
            self._redis: redis.Redis = _TranslatingRedis.from_url(
                connect_url,
                decode_responses=True,
                # A damaged payload must reach the worker (which fails that job with a clear
                # reason), not raise UnicodeDecodeError inside reserve or get_job.
                encoding_errors="replace",
                socket_connect_timeout=5.0,
                socket_timeout=SOCKET_TIMEOUT_S,
                health_check_interval=30,
                # One quick retry replaces a pooled connection that died with a Redis restart;
                # more would hide an outage from the worker (which backs off and logs it itself)
                # for tens of seconds, and re-send scripts whose reply, not whose effect, was lost.
                retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), retries=1),
            )
        except ValueError as exc:  # redis-py's reading of the URL: a bad port, db or option
            raise StoreMisconfigured(f"redis URL for {where}: {exc}") from exc
        cast(_TranslatingRedis, self._redis).where = where
        socket_timeout = self._redis.connection_pool.connection_kwargs.get("socket_timeout")
        self._block_cap = BLOCK_CAP_S
        if isinstance(socket_timeout, int | float) and socket_timeout > 0:
            self._block_cap = max(MIN_BLOCK_S, min(BLOCK_CAP_S, float(socket_timeout) * 0.66))
        self._q = {name: self._redis.register_script(s) for name, s in queue_scripts().items()}
        self._g = {name: self._redis.register_script(s) for name, s in global_scripts().items()}
        # job id -> queue. Ids are unique and a job never changes queue, so an entry is either
        # right or names a job that no longer exists anywhere.
        self._job_queue: dict[str, str] = {}
        self._layout_checked = False

    # -- keys ----------------------------------------------------------------------------
    def _global_key(self, name: str) -> str:
        return f"{self.prefix}:{{g}}:{name}"

    def _base(self, queue: str) -> str:
        return f"{self.prefix}:{{q:{quote_queue(queue)}}}"

    def _queue_keys(self, queue: str) -> list[str]:
        base = self._base(queue)
        return [
            f"{base}:queued",
            f"{base}:running",
            f"{base}:notify",
            f"{base}:seq",
            f"{base}:all",
            *(f"{base}:idx:{state}" for state in STORED_STATES),
        ]

    def key_pattern(self) -> str:
        """A SCAN MATCH pattern for every key of this prefix and no other prefix's."""
        return glob_escape(self.prefix) + ":{*"

    # -- running scripts -----------------------------------------------------------------
    def _qcall(self, script: str, queue: str, *args: Any) -> Call:
        return (self._q[script], self._queue_keys(queue), [self._base(queue), queue, *args])

    def _run(self, call: Call) -> Any:
        if not self._layout_checked:
            self.check_layout()
        script, keys, args = call
        return script(keys=keys, args=args, client=self._redis)

    def _run_many(self, calls: Sequence[Call]) -> list[Any]:
        """Run scripts in one round trip; a script the server forgot is loaded and re-run."""
        if not calls:
            return []
        if not self._layout_checked:
            self.check_layout()
        pipe = self._redis.pipeline(transaction=False)
        for script, keys, args in calls:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        results: list[Any] = pipe.execute(raise_on_error=False)
        for i, result in enumerate(results):
            # NOSCRIPT means that script did not run at all (Redis restarted or SCRIPT FLUSH),
            # so running it again cannot apply anything twice.
            if isinstance(result, NoScriptError):
                results[i] = self._run(calls[i])
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    def check_layout(self) -> None:
        """Record the key layout on first use, or refuse keys written in another one: every
        change of state goes through a script, so no write happens before this check."""
        meta = self._global_key("meta")
        pipe = self._redis.pipeline(transaction=False)
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
        self._layout_checked = True

    # -- finding a job's queue -----------------------------------------------------------
    def _queues(self) -> list[str]:
        return sorted(cast(set[str], self._redis.smembers(self._global_key("queues"))))

    def _remember(self, job_id: str, queue: str) -> None:
        if len(self._job_queue) >= JOB_CACHE_MAX:
            self._job_queue.clear()
        self._job_queue[job_id] = queue

    def _locate(self, job_id: str) -> str | None:
        return self._locate_many([job_id]).get(job_id)

    def _locate_many(self, job_ids: Sequence[str]) -> dict[str, str]:
        """Which queue holds each job: from the cache, else by asking every queue at once."""
        found: dict[str, str] = {}
        for job_id in job_ids:
            # .get, not `in` then [ ]: another thread may clear the cache in between.
            queue = self._job_queue.get(job_id)
            if queue is not None:
                found[job_id] = queue
        missing = [j for j in dict.fromkeys(job_ids) if j not in found]
        if not missing:
            return found
        queues = self._queues()
        if not queues:
            return found
        pipe = self._redis.pipeline(transaction=False)
        probes = [(j, q) for j in missing for q in queues]
        for job_id, queue in probes:
            pipe.exists(f"{self._base(queue)}:job:{job_id}")
        for (job_id, queue), exists in zip(probes, pipe.execute(), strict=True):
            if exists and job_id not in found:
                found[job_id] = queue
                self._remember(job_id, queue)
        return found


# -- errors --------------------------------------------------------------------------------
class _TranslatingRedis(redis.Redis):
    """redis-py raising tenure's errors: every caller of the store (a worker backing off, the
    CLI, dispatch in a web request) catches StoreUnavailable on every backend alike."""

    where = "localhost"

    def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except redis.RedisError as exc:
            translated = store_error(exc, self.where)
            if translated is None:
                raise
            raise translated from exc

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = _TranslatingPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )
        pipe.where = self.where
        return pipe


class _TranslatingPipeline(redis.client.Pipeline):
    where = "localhost"

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            return super().execute(raise_on_error)
        except redis.RedisError as exc:
            translated = store_error(exc, self.where)
            if translated is None:
                raise
            raise translated from exc


# Refusals that retrying cannot fix: wrong password or user, an ACL that forbids the commands,
# a database number the server does not have.
MISCONFIGURED = (
    redis.exceptions.AuthenticationError,
    redis.exceptions.AuthorizationError,
    redis.exceptions.AuthenticationWrongNumberOfArgsError,
    redis.exceptions.NoPermissionError,
)


def store_error(exc: redis.RedisError, where: str) -> StoreMisconfigured | StoreUnavailable | None:
    """The error a caller should act on, with redis-py's own reason; None: pass it on as is
    (a script's own error, NOSCRIPT, a wrong type)."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MISCONFIGURED) or "DB index is out of range" in reason:
        return StoreMisconfigured(
            f"Redis at {where} refused the connection: {reason}; retrying will not help, "
            "fix the store URL (user, password, database number) or the server's ACL"
        )
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return StoreUnavailable(f"cannot reach Redis at {where}: {reason}")
    return None


# -- URL and key helpers -------------------------------------------------------------------
def split_prefix(url: str) -> tuple[str, str]:
    """Take `prefix=` out of a redis:// URL: it names our keys, redis-py must not see it."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [value for key, value in query if key == "prefix"]
    rest = [(key, value) for key, value in query if key != "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not prefix or any(c in prefix for c in "{}") or any(c.isspace() for c in prefix):
        raise ConfigError(
            f"redis URL: prefix= expected a non-empty name without braces or spaces "
            f"(e.g. prefix=myapp), got {prefix!r}"
        )
    return urlunsplit(parts._replace(query=urlencode(rest))), prefix


def quote_queue(queue: str) -> str:
    """A queue name made safe inside a hash tag: a brace would end the tag early and let one
    queue's keys spell another's; '%' is escaped too so that two names never encode alike."""
    return queue.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


def glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def clock_value(seconds: int, micros: int) -> float:
    # The same text-then-float path the scripts use, so Python and Lua agree to the bit.
    return float(f"{int(seconds)}.{int(micros):06d}")


def optional(value: str | None) -> str:
    """How a script receives an optional string: '-' for none, '+text' otherwise."""
    return "-" if value is None else "+" + value

"""Opening the Redis store's connection from its URL, in each topology tenure runs on:

    redis://[user:password@]host:port/db?prefix=NAME          one server (rediss:// for TLS)
    redis+cluster://[user:password@]h1:p1,h2:p2,h3:p3/0?prefix=NAME
                                                          Redis Cluster: any of its nodes; the
                                                          client learns the rest (db must be 0)
    redis+sentinel://[user:password@]s1:p1,s2:p2,s3:p3/MASTER/db?prefix=NAME&wait_replicas=1
                                                          the master the Sentinels name MASTER;
                                                          the password is the data servers'

`wait_replicas=N` (redis:// and redis+sentinel://): every script is followed, on the same
connection, by `WAIT N`, and a write that N replicas did not confirm within WAIT_TIMEOUT_MS is
reported as StoreUnavailable. Replication is asynchronous: without it, the writes a master
acknowledged in the second before a failover demoted it are lost (jobs dispatched then vanish,
ends recorded then are undone and the attempt runs again unrecorded). With it, everything
tenure was told is stored is on the replica Sentinel promotes. It is 1 by default on
redis+sentinel:// (wait_replicas=0 trades that for writes that go on while no replica is up)
and 0 on redis://.

and the errors every caller acts on: redis-py's failures become tenure's StoreUnavailable
(retry later) or StoreMisconfigured (retrying cannot help), whatever the topology.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import SlotNotCoveredError
from redis.retry import Retry
from redis.sentinel import Sentinel

from tenure.core.errors import ConfigError, StoreMisconfigured, StoreUnavailable

DEFAULT_PREFIX = "tenure"
# BLPOP must return before the socket timeout fires, or the wait would look like an outage.
SOCKET_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Connection:
    client: Any  # redis.Redis, or RedisCluster on a cluster
    prefix: str
    where: str  # for people: which server(s) an error is about
    cluster: bool = False
    wait_replicas: int = 0
    sentinel: bool = False


def connect(url: str) -> Connection:
    scheme = url.split(":", 1)[0].lower()
    if scheme == "redis+cluster":
        return _connect_cluster(url)
    if scheme == "redis+sentinel":
        return _connect_sentinel(url)
    return _connect_server(url)


def _options() -> dict[str, Any]:
    return {
        "decode_responses": True,
        # A damaged payload must reach the worker (which fails that job with a clear reason),
        # not raise UnicodeDecodeError inside reserve or get_job.
        "encoding_errors": "replace",
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "socket_timeout": SOCKET_TIMEOUT_S,
        "health_check_interval": 30,
        # One quick retry replaces a pooled connection that died with a Redis restart or a
        # failover; more would hide an outage from the worker (which backs off and logs it
        # itself) for tens of seconds, and re-send scripts whose reply, not whose effect, was lost.
        "retry": Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), retries=1),
    }


def _connect_server(url: str) -> Connection:
    connect_url, replicas = split_wait_replicas(url)
    connect_url, prefix = split_prefix(connect_url)
    where = urlsplit(connect_url).netloc.rpartition("@")[2] or "localhost"
    try:
        client = cast(TranslatingRedis, TranslatingRedis.from_url(connect_url, **_options()))
    except ValueError as exc:  # redis-py's reading of the URL: a bad port, db or option
        raise StoreMisconfigured(f"redis URL for {where}: {exc}") from exc
    client.where = where
    return Connection(client, prefix, where, wait_replicas=replicas)


@dataclass(frozen=True)
class _MultiHostUrl:
    hosts: list[tuple[str, int]]
    path: list[str]  # the path's parts after the hosts, e.g. ["mymaster", "0"]
    username: str | None
    password: str | None
    prefix: str
    wait_replicas: int


def parse_multi_host(url: str, form: str, *, wait: bool) -> _MultiHostUrl:
    """The parts of a redis+cluster:// or redis+sentinel:// URL; `form` shows the expected
    shape in errors. Other options are refused: nothing would read them."""
    # Sentinel watches a master with replicas: waiting for one is the safe default there.
    rest, replicas = split_wait_replicas(url, default=1) if wait else (url, 0)
    rest, prefix = split_prefix(rest)
    parts = urlsplit(rest)
    if parts.query:
        allowed = "prefix=NAME and wait_replicas=N" if wait else "prefix=NAME"
        raise ConfigError(f"{form}: the only options are {allowed}, got ?{parts.query}")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    hosts: list[tuple[str, int]] = []
    for item in hostlist.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"{form}: expected host:port for every node, got {item!r}")
        hosts.append((host.strip("[]"), int(port)))
    return _MultiHostUrl(
        hosts=hosts,
        path=[p for p in parts.path.split("/") if p],
        username=unquote(username) or None,
        password=unquote(password) or None,
        prefix=prefix,
        wait_replicas=replicas,
    )


def _connect_cluster(url: str) -> Connection:
    form = "redis+cluster://host:port,host:port,.../0"
    parsed = parse_multi_host(url, form, wait=False)
    if parsed.path not in ([], ["0"]):
        raise ConfigError(
            f"{form}: a Redis Cluster has database 0 only, got /{'/'.join(parsed.path)}"
        )
    where = "Redis Cluster at " + ",".join(f"{h}:{p}" for h, p in parsed.hosts)
    client = TranslatingCluster(
        startup_nodes=[
            ClusterNode(host, port)  # type: ignore[no-untyped-call]
            for host, port in parsed.hosts
        ],
        username=parsed.username,
        password=parsed.password,
        **_options(),
    )
    client.where = where
    return Connection(client, parsed.prefix, where, cluster=True)


def _connect_sentinel(url: str) -> Connection:
    form = "redis+sentinel://host:port,host:port,.../MASTER_NAME/db"
    parsed = parse_multi_host(url, form, wait=True)
    if len(parsed.path) not in (1, 2) or (len(parsed.path) == 2 and not parsed.path[1].isdigit()):
        raise ConfigError(
            f"{form}: expected the master's name and a database number after the Sentinels, "
            f"got /{'/'.join(parsed.path)}"
        )
    name = parsed.path[0]
    db = int(parsed.path[1]) if len(parsed.path) == 2 else 0
    where = f"Redis master {name!r} (Sentinels at {','.join(f'{h}:{p}' for h, p in parsed.hosts)})"
    # Sentinels answer small questions; a short timeout lets the client try the next one.
    sentinels = Sentinel(  # type: ignore[no-untyped-call]
        parsed.hosts,
        sentinel_kwargs={
            "socket_timeout": CONNECT_TIMEOUT_S,
            "socket_connect_timeout": CONNECT_TIMEOUT_S,
        },
    )
    client = sentinels.master_for(  # type: ignore[no-untyped-call]
        name,
        redis_class=TranslatingRedis,
        db=db,
        username=parsed.username,
        password=parsed.password,
        **_options(),
    )
    client.where = where
    return Connection(
        client, parsed.prefix, where, wait_replicas=parsed.wait_replicas, sentinel=True
    )


# -- errors --------------------------------------------------------------------------------
class _Translating:
    """redis-py raising tenure's errors: every caller of the store (a worker backing off, the
    CLI, dispatch in a web request) catches StoreUnavailable on every backend alike."""

    where = "localhost"

    def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute_command(*args, **options)  # type: ignore[misc]
        except (redis.RedisError, SlotNotCoveredError) as exc:
            raise_translated(exc, self.where)
            raise


class TranslatingRedis(_Translating, redis.Redis):
    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        return translating_pipeline(self, self.where, transaction=transaction)


class TranslatingCluster(_Translating, RedisCluster):
    where = "Redis Cluster"


class TranslatingPipeline(redis.client.Pipeline):
    where = "localhost"

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            return super().execute(raise_on_error)
        except redis.RedisError as exc:
            raise_translated(exc, self.where)
            raise


def translating_pipeline(
    client: redis.Redis, where: str, *, transaction: bool
) -> TranslatingPipeline:
    """A pipeline on `client`'s connections (one server, or one cluster node's) raising
    tenure's errors."""
    pipe = TranslatingPipeline(client.connection_pool, client.response_callbacks, transaction, None)
    pipe.where = where
    return pipe


# Refusals that retrying cannot fix: wrong password or user, an ACL that forbids the commands,
# a database number the server does not have.
MISCONFIGURED = (
    redis.exceptions.AuthenticationError,
    redis.exceptions.AuthorizationError,
    redis.exceptions.AuthenticationWrongNumberOfArgsError,
    redis.exceptions.NoPermissionError,
)
# A cluster that lost a node (or is electing a replica) refuses for a while: an outage.
UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    SlotNotCoveredError,
)


def store_error(exc: Exception, where: str) -> StoreMisconfigured | StoreUnavailable | None:
    """The error a caller should act on, with redis-py's own reason; None: pass it on as is
    (a script's own error, NOSCRIPT, a wrong type)."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MISCONFIGURED) or "DB index is out of range" in reason:
        return StoreMisconfigured(
            f"Redis at {where} refused the connection: {reason}; retrying will not help, "
            "fix the store URL (user, password, database number) or the server's ACL"
        )
    if isinstance(exc, UNAVAILABLE):
        named = where if where.startswith("Redis") else f"Redis at {where}"
        return StoreUnavailable(f"cannot reach {named}: {reason}")
    return None


def raise_translated(exc: Exception, where: str) -> None:
    translated = store_error(exc, where)
    if translated is not None:
        raise translated from exc


# -- URL helpers ---------------------------------------------------------------------------
def _take_option(url: str, name: str, default: str) -> tuple[str, str]:
    """`url` without its `name=` options, and the last one's value (`default` when absent)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    values = [value for key, value in query if key == name]
    rest = urlencode([(key, value) for key, value in query if key != name])
    return urlunsplit(parts._replace(query=rest)), values[-1] if values else default


def split_wait_replicas(url: str, default: int = 0) -> tuple[str, int]:
    """Take `wait_replicas=N` out of a redis URL (`default` when absent)."""
    rest, text = _take_option(url, "wait_replicas", str(default))
    if not text.isdigit() or int(text) > 100:
        raise ConfigError(
            f"redis URL: wait_replicas= expected how many replicas must confirm each write "
            f"(0 to 100, e.g. wait_replicas=1), got {text!r}"
        )
    return rest, int(text)


def split_prefix(url: str) -> tuple[str, str]:
    """Take `prefix=` out of a redis URL: it names our keys, redis-py must not see it."""
    rest, prefix = _take_option(url, "prefix", DEFAULT_PREFIX)
    if not prefix or any(c in prefix for c in "{}") or any(c.isspace() for c in prefix):
        raise ConfigError(
            f"redis URL: prefix= expected a non-empty name without braces or spaces "
            f"(e.g. prefix=myapp), got {prefix!r}"
        )
    return rest, prefix

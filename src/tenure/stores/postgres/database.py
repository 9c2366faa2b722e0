"""The PostgreSQL plumbing under the store: URL, pool, transactions, clock, schema, LISTEN.

Kept apart from the job verbs in `tenure.stores.postgres` so that file reads as the queue's
rules, while this one owns what can go wrong with a database: connections that die with the
server, two processes migrating at once, notifications sent while nobody listened.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from tenure.core.errors import ConfigError, StoreMisconfigured, StoreUnavailable
from tenure.stores.postgres.schema import migrations

DEFAULT_SCHEMA = "tenure"
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
POOL_MAX = 10
# How long a call waits for a connection before reporting the store unavailable: short, so a
# worker notices an outage and backs off instead of hanging in the pool. libpq's own
# `connect_timeout=` in the URL overrides it (a worker with short leases wants it shorter).
CONNECT_TIMEOUT_S = 5.0
# pg_advisory_xact_lock's first key; the second is the schema's hash. 0x7E4E: "tenure".
ADVISORY_CLASS = 0x7E4E

# The server's time at the moment it is read (inside a transaction, now() is when it began).
CLOCK = "date_part('epoch', clock_timestamp())"

Cursor = psycopg.Cursor[DictRow]
Connection = psycopg.Connection[DictRow]


class Database:
    """One schema in one PostgreSQL database, reached through a thread-safe pool."""

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.conninfo, self.schema = parse_url(url)
        pooled, listen_url = pooler_settings(url)
        # Behind a transaction pooler (PgBouncer pool_mode=transaction) a server connection is
        # lent for one transaction: a statement prepared on it is not there next time, and a
        # LISTEN on it hears nothing. So nothing is prepared, and LISTEN takes `listen_url`
        # (a direct connection), or idle workers poll.
        self.connect_kwargs: dict[str, Any] = {"prepare_threshold": None} if pooled else {}
        self.listen_conninfo: str | None = (
            parse_url(listen_url)[0] if listen_url else None if pooled else self.conninfo
        )
        self.quoted_schema = f'"{self.schema}"'
        self.channel = channel_name(self.schema)
        self.where = self.conninfo.split("@")[-1].split("?")[0]  # for messages: no password
        self.connect_timeout = connect_timeout(self.conninfo)
        self._pool_max = pool_max
        self._pool: ConnectionPool[Connection] | None = None
        self._lock = threading.Lock()
        self._migrated = False
        self._listener: psycopg.Connection[Any] | None = None
        self._listen_lock = threading.Lock()
        self._pid = os.getpid()
        self._freshness = _Freshness()

    def q(self, sql: str) -> str:
        """The statement with `{s}` replaced by this store's (validated, quoted) schema."""
        return in_schema(self.quoted_schema, sql)

    # -- connections -------------------------------------------------------------------
    def _forget_if_forked(self) -> None:
        # A forked child must not talk over its parent's sockets (the two would interleave
        # protocol messages), nor close them: it drops them and opens its own.
        if self._pid != os.getpid():
            self._pool, self._listener, self._pid = None, None, os.getpid()

    def _get_pool(self) -> ConnectionPool[Connection]:
        with self._lock:
            self._forget_if_forked()
            if self._pool is None:
                pool: ConnectionPool[Connection] = ConnectionPool(
                    self.conninfo,
                    kwargs={"autocommit": True, "row_factory": dict_row, **self.connect_kwargs},
                    min_size=1,
                    max_size=self._pool_max,
                    open=False,
                    # a connection that died with the server (restart, failover) is replaced
                    # on checkout instead of failing the caller's first statement
                    check=self._freshness.check,
                    timeout=self.connect_timeout,
                    name=f"tenure:{self.schema}",
                )
                # The pool retries a refused connection in the background until its timeout
                # and then says only "timeout"; one plain connection first gives libpq's own
                # reason at once, and a wrong database or password fails instead of retrying.
                self._connect(self.conninfo, **self.connect_kwargs).close()
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self, *, migrate: bool = True) -> Iterator[Connection]:
        if migrate and not self._migrated:
            self.migrate()
        try:
            with self._get_pool().connection() as conn:
                yield conn
                self._freshness.used(conn)  # not after an error: that one is checked
        except PoolTimeout as exc:
            raise self._no_connection(exc) from exc
        except psycopg.OperationalError as exc:
            # a dead connection or server, not a deadlock or serialization failure
            if exc.sqlstate is None or exc.sqlstate.startswith(("08", "57P")):
                raise StoreUnavailable(
                    f"lost the connection to PostgreSQL at {self.where}: {exc}"
                ) from exc
            raise

    def checkout(self) -> Connection:
        """A pooled connection for the caller alone until `checkin`: a job's own transaction."""
        if not self._migrated:
            self.migrate()
        try:
            return self._get_pool().getconn()
        except PoolTimeout as exc:
            raise self._no_connection(exc) from exc

    def _connect(self, conninfo: str, **kwargs: Any) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pool; why that fails, in libpq's own words."""
        try:
            return psycopg.connect(
                conninfo, connect_timeout=max(1, round(self.connect_timeout)), **kwargs
            )
        except psycopg.Error as exc:
            raise connect_error(exc, self.where) from exc

    def _no_connection(self, exc: PoolTimeout) -> Exception:
        """The pool timed out: ask the server directly why, so the caller learns the reason."""
        try:
            self._connect(self.conninfo, **self.connect_kwargs).close()
        except (StoreMisconfigured, StoreUnavailable) as reason:
            return reason
        return StoreUnavailable(
            f"PostgreSQL at {self.where} gave no connection within "
            f"{self.connect_timeout:g} s (all {self._pool_max} in use?): {exc}"
        )

    def checkin(self, conn: Connection) -> None:
        """Give a checked-out connection back, as the pool lent it: autocommit, dict rows. One
        left broken or mid-transaction is rolled back or discarded by the pool."""
        with self._lock:
            pool = self._pool if self._pid == os.getpid() else None
        if pool is None:  # the pool was closed or this is a forked child: just let it go
            conn.close()
            return
        try:
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                conn.autocommit = True
            conn.row_factory = dict_row
        except psycopg.Error:
            conn.close()
        pool.putconn(conn)

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """Autocommit: each statement is its own transaction (and its own `now()`)."""
        with self.connection() as conn, conn.cursor() as cur:
            yield cur

    def caller_cursor(self, conn: Any) -> Cursor:
        """A dict-row cursor on the application's own connection, inside its transaction.

        Takes a psycopg (3) connection, or what SQLAlchemy wraps one in: a Connection (its
        `.connection`) or its DB-API connection proxy (its `.driver_connection`). Nothing here
        commits: the application's commit makes the jobs visible (and sends the NOTIFY, which
        PostgreSQL holds until then), its rollback leaves no job."""
        raw = _unwrap(conn)
        if not isinstance(raw, psycopg.Connection):
            raise ConfigError(
                "conn=: the PostgreSQL store takes a psycopg connection (psycopg 3), or a "
                f"SQLAlchemy connection on the psycopg driver; got {type(conn).__name__}"
            )
        mine = conninfo_to_dict(self.conninfo).get("dbname")
        theirs = raw.info.dbname
        if mine is not None and theirs != mine:
            raise ConfigError(
                f"conn=: that connection is to database {theirs!r}, this store is in {mine!r}; "
                "enqueueing in a transaction needs the same database"
            )
        if raw.autocommit and raw.info.transaction_status == TransactionStatus.IDLE:
            raise ConfigError(
                "conn=: that connection is in autocommit mode with no transaction open, so there "
                "is no transaction to enqueue in; open one first (with conn.transaction(): ...)"
            )
        if not self._migrated:
            self.migrate()  # on the store's own connection: DDL is not the application's business
        return raw.cursor(row_factory=dict_row)

    @staticmethod
    def clock(cur: Cursor) -> float:
        """The server's time at this moment; inside a transaction, read it after the locks."""
        row = cur.execute(f"SELECT {CLOCK} AS now").fetchone()
        assert row is not None
        return float(row["now"])

    def close(self) -> None:
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # -- schema ------------------------------------------------------------------------
    def migrate(self) -> None:
        with self.connection(migrate=False) as conn, conn.transaction(), conn.cursor() as cur:
            # Two processes starting at once would both find version 0 and both create the
            # tables; the lock makes the second wait, then find the work done.
            cur.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_CLASS, self.schema)
            )
            cur.execute(self.q("CREATE SCHEMA IF NOT EXISTS {s}"))
            cur.execute(
                self.q(
                    "CREATE TABLE IF NOT EXISTS {s}.tenure_schema_version (version integer"
                    " PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL"
                    " DEFAULT now())"
                )
            )
            current = self._version(cur)
            known = migrations()
            if current > len(known):
                raise ConfigError(
                    f"PostgreSQL schema {self.schema!r} is at version {current}, newer than "
                    f"this tenure knows ({len(known)}); upgrade tenure on this host"
                )
            for step in known[current:]:
                cur.execute(self.q(step.sql))
                cur.execute(
                    self.q("INSERT INTO {s}.tenure_schema_version (version, name) VALUES (%s, %s)"),
                    (step.version, step.name),
                )
        self._migrated = True

    def schema_version(self) -> int:
        with self.cursor() as cur:
            return self._version(cur)

    def _version(self, cur: Cursor) -> int:
        row = cur.execute(
            self.q("SELECT coalesce(max(version), 0) AS v FROM {s}.tenure_schema_version")
        ).fetchone()
        return int(row["v"]) if row else 0

    # -- wake-ups ----------------------------------------------------------------------
    def wait_for_notify(self, wanted: set[str], timeout: float) -> None:
        """Block until a NOTIFY for one of `wanted` (any, if empty) arrives, or `timeout`."""
        deadline = time.monotonic() + max(timeout, 0.0)
        if self.listen_conninfo is None:  # behind a pooler with no listen_url: a bounded poll
            time.sleep(max(timeout, 0.0))
            return
        # One thread reads the LISTEN connection at a time; another waits its turn, within
        # its own timeout.
        if not self._listen_lock.acquire(timeout=max(timeout, 0.0)):
            return
        try:
            with self._lock:
                self._forget_if_forked()
            listener = self._listener
            if listener is None or listener.closed or listener.broken:
                if not self._migrated:
                    self.migrate()
                listener = self._connect(self.listen_conninfo, autocommit=True)
                listener.execute(f'LISTEN "{self.channel}"')
                self._listener = listener
                # Work enqueued before LISTEN took effect sent its NOTIFY to nobody: return
                # at once so the caller looks again, now that nothing more can be missed.
                return
            # The connection keeps notifications that arrive between calls, so a job
            # enqueued while the caller was reserving still wakes the next wait.
            while (left := deadline - time.monotonic()) > 0:
                for note in listener.notifies(timeout=left, stop_after=1):
                    if not wanted or note.payload in wanted:
                        return
        except psycopg.OperationalError as exc:
            if self._listener is not None:
                self._listener.close()
            self._listener = None
            raise StoreUnavailable(
                f"lost the LISTEN connection to PostgreSQL at {self.where}: {exc}"
            ) from exc
        finally:
            self._listen_lock.release()


def parse_url(url: str) -> tuple[str, str]:
    """Split a tenure URL into the libpq URL (tenure's own parameters removed) and the schema."""
    parts = urlsplit(url)
    schema = DEFAULT_SCHEMA
    kept: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "schema":
            schema = value
        elif key in POOLER_PARAMS:
            continue
        else:
            kept.append((key, value))
    if not SCHEMA_NAME.fullmatch(schema):
        raise ConfigError(
            "schema: expected a plain PostgreSQL name (a letter or _, then letters, digits"
            f" or _; at most 63), got {schema!r}"
        )
    # quote, not urlencode's default quote_plus: libpq reads '+' as a plus, not a space, so
    # `options=-c%20statement_timeout%3D5000` must come back with %20.
    return urlunsplit(parts._replace(query=urlencode(kept, quote_via=quote))), schema


POOLER_PARAMS = ("pooler", "listen_url")


def pooler_settings(url: str) -> tuple[bool, str | None]:
    """`?pooler=transaction` (behind PgBouncer or another transaction pooler) and
    `?listen_url=postgresql://...` (a direct connection for LISTEN), from a tenure URL."""
    pooled, listen_url = False, None
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if key == "pooler":
            if value not in ("transaction", "session", "none"):
                raise ConfigError(f"pooler: expected transaction, session or none, got {value!r}")
            pooled = value == "transaction"
        elif key == "listen_url":
            if not value.startswith(("postgresql://", "postgres://")):
                raise ConfigError(f"listen_url: expected a postgresql:// URL, got {value!r}")
            listen_url = value
    return pooled, listen_url


def connect_timeout(conninfo: str) -> float:
    for key, value in parse_qsl(urlsplit(conninfo).query):
        if key == "connect_timeout":
            try:
                return max(float(value), 0.5)
            except ValueError:
                raise ConfigError(f"connect_timeout: expected seconds, got {value!r}") from None
    return CONNECT_TIMEOUT_S


def channel_name(schema: str) -> str:
    # NOTIFY channels are database-wide: one per schema keeps two tenure installations in one
    # database from waking each other; hashed when long, since channel names stop at 63 bytes.
    name = f"tenure:{schema}"
    if len(name) > 63:
        name = "tenure:" + hashlib.sha1(schema.encode()).hexdigest()[:24]
    return name


class _Freshness:
    """The pool's checkout check, skipped for a connection that worked moments ago: checking
    costs a round trip on every store call, which a busy worker pays on every job. One idle
    for longer is checked, so a restarted server's dead connections are replaced on checkout;
    one that died in the last moment fails its call, which callers retry."""

    FRESH_S = 1.0

    def __init__(self) -> None:
        self._used_at: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def used(self, conn: Connection) -> None:
        with self._lock:
            self._used_at[conn] = time.monotonic()

    def check(self, conn: Connection) -> None:
        with self._lock:
            at = self._used_at.get(conn)
        if at is None or time.monotonic() - at >= self.FRESH_S:
            ConnectionPool.check_connection(conn)


# libpq's words for a refusal that retrying cannot fix. Connecting reports no SQLSTATE, so
# the text is all there is; anything else (refused, timed out, DNS, "starting up", too many
# clients) is an outage the caller may wait out.
MISCONFIGURED_MARKERS = (
    "does not exist",  # database or role
    "authentication failed",  # password, ident, peer, SCRAM
    "no password supplied",
    "no pg_hba.conf entry",
    "connection is bad: invalid",  # a malformed option in the URL: port, sslmode...
)


def connect_error(exc: psycopg.Error, where: str) -> StoreMisconfigured | StoreUnavailable:
    """Why connecting failed, as the error a caller should act on, with libpq's text."""
    reason = " ".join(str(exc).split())
    if isinstance(exc, psycopg.ProgrammingError) or any(m in reason for m in MISCONFIGURED_MARKERS):
        return StoreMisconfigured(
            f"PostgreSQL at {where} refused the connection: {reason}; retrying will not help, "
            "fix the store URL (database, role, password) or the server's access rules"
        )
    return StoreUnavailable(f"cannot reach PostgreSQL at {where}: {reason}")


def _unwrap(conn: Any) -> Any:
    for _ in range(3):
        if isinstance(conn, psycopg.Connection):
            return conn
        inner = getattr(conn, "driver_connection", None)  # SQLAlchemy's DB-API proxy
        if inner is None and hasattr(conn, "exec_driver_sql"):  # a SQLAlchemy Connection
            inner = getattr(conn, "connection", None)
        if inner is None:
            return conn
        conn = inner
    return conn


@functools.lru_cache(maxsize=1024)
def in_schema(quoted_schema: str, sql: str) -> str:
    """`sql` with `{s}` replaced by a (validated, quoted) schema. Cached: the hot path
    (stores/postgres/jobs.py) puts each of its statements in its schema once, and then a
    statement costs a dictionary lookup."""
    return sql.replace("{s}", quoted_schema)

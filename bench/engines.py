"""The three engines: where each phase's data lives, and how it is wiped between phases so
every system starts on an empty store. Runs in tenure's venv (psycopg and redis-py are there)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/tenure_bench"
)


class Engine:
    name = ""

    def problem(self) -> str | None:
        """Why this engine cannot run here, or None."""
        return None

    def reset(self) -> None:
        """Wipe everything the previous phase left."""

    def url_for(self, system: str) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        return ""

    def close(self) -> None:
        """End what the engine started (a throwaway topology)."""


class SQLiteEngine(Engine):
    name = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="sqlite-", dir=workdir))
        self.phase = 0

    def reset(self) -> None:
        self.phase += 1  # a new file per phase: nothing to wipe, nothing to wait for

    def path(self, system: str) -> Path:
        return self.dir / f"{system}-{self.phase}.db"

    def url_for(self, system: str) -> str:
        path = self.path(system)
        return f"sqlite:///{path}" if system.startswith("tenure") else str(path)

    def describe(self) -> str:
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}, a file in {self.dir.parent} (WAL for tenure)"


class RedisEngine(Engine):
    name = "redis"

    def __init__(self) -> None:
        self.url = REDIS_URL

    def _client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis.from_url(self.url)

    def problem(self) -> str | None:
        try:
            with self._client() as client:
                client.ping()
        except Exception as exc:
            return f"Redis at {self.url} is not reachable: {exc}"
        return None

    def reset(self) -> None:
        with self._client() as client:
            client.flushdb()  # only the benchmark's own database number

    def url_for(self, system: str) -> str:
        return self.url

    def describe(self) -> str:
        with self._client() as client:
            info = client.info("server")
            conf = client.config_get("appendonly")
            save = client.config_get("save")
        return (
            f"Redis {info['redis_version']} at {self.url} (appendonly={conf.get('appendonly')},"
            f" save='{save.get('save')}')"
        )


class PostgresEngine(Engine):
    name = "postgres"

    def __init__(self) -> None:
        self.url = POSTGRES_URL
        parts = urlsplit(self.url)
        self.database = parts.path.lstrip("/")
        self.admin_url = urlunsplit(parts._replace(path="/postgres"))

    def _admin(self):  # type: ignore[no-untyped-def]
        import psycopg

        return psycopg.connect(self.admin_url, autocommit=True)

    def problem(self) -> str | None:
        try:
            with self._admin() as conn:
                conn.execute("SELECT 1")
        except Exception as exc:
            return f"PostgreSQL at {self.admin_url} is not reachable: {exc}"
        return None

    def reset(self) -> None:
        # A fresh database per phase: no bloat or dead tuples carried from the previous system.
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.database}"')

    def url_for(self, system: str) -> str:
        return self.url

    def describe(self) -> str:
        with self._admin() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            settings = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]
                for name in ("synchronous_commit", "fsync", "shared_buffers")
            }
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        return f"PostgreSQL {version} at {self.url.split('@')[-1]} ({shown}; server defaults)"


def _topologies() -> Any:
    """tests/topologies.py: the throwaway Redis Cluster and PgBouncer the tests start."""
    tests_dir = str(Path(__file__).resolve().parents[1] / "tests")
    if tests_dir not in sys.path:
        sys.path.insert(0, tests_dir)
    import topologies

    return topologies


class RedisClusterEngine(Engine):
    """A throwaway three-master Redis Cluster on loopback (no persistence, like the cluster
    fixture): tenure only, through redis+cluster://."""

    name = "redis-cluster"

    def __init__(self) -> None:
        self.cluster: Any = None
        self.error: str | None = None
        try:
            self.cluster = _topologies().ThrowawayRedisCluster()
            self.cluster.start()
        except Exception as exc:
            self.error = f"cannot start a Redis Cluster: {exc}"

    def problem(self) -> str | None:
        return self.error

    def reset(self) -> None:
        import redis

        for port in self.cluster.ports:  # our own throwaway cluster: every node is ours
            with redis.Redis(port=port) as node:
                node.flushdb()

    def url_for(self, system: str) -> str:
        return str(self.cluster.url)

    def describe(self) -> str:
        import redis

        with redis.Redis(port=self.cluster.ports[0]) as node:
            version = node.info("server")["redis_version"]
        return f"Redis Cluster {version}, 3 masters on loopback, no persistence"

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


class PgBouncerEngine(PostgresEngine):
    """The benchmark's PostgreSQL database through a throwaway PgBouncer in transaction
    pooling (pool of 20); LISTEN on a direct connection, as the README says to."""

    name = "pgbouncer"

    def __init__(self) -> None:
        super().__init__()
        self.bouncer: Any = None
        self.error: str | None = None
        try:
            self.bouncer = _topologies().ThrowawayPgBouncer(self.url)
            self.bouncer.start()
        except Exception as exc:
            self.error = f"cannot start PgBouncer: {exc}"

    def problem(self) -> str | None:
        return self.error or super().problem()

    def url_for(self, system: str) -> str:
        pooled = self.bouncer.url.rsplit("/", 1)[0] + f"/{self.database}"
        return str(_topologies().through_pgbouncer(pooled, self.url))

    def describe(self) -> str:
        return super().describe() + ", through PgBouncer 1.18 (pool_mode=transaction)"

    def close(self) -> None:
        if self.bouncer is not None:
            self.bouncer.close()


def make(name: str, workdir: Path) -> Engine:
    if name == "sqlite":
        return SQLiteEngine(workdir)
    if name == "redis":
        return RedisEngine()
    if name == "postgres":
        return PostgresEngine()
    if name == "redis-cluster":
        return RedisClusterEngine()
    if name == "pgbouncer":
        return PgBouncerEngine()
    raise SystemExit(
        f"--engines: expected sqlite, postgres, redis, redis-cluster or pgbouncer, got {name!r}"
    )

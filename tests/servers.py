"""Real PostgreSQL and Redis servers for the tests: the ones the developer runs, else throwaway
ones started from the binaries on PATH.

Throwaway servers also serve the outage tests: `stop()` takes the server away mid-run and
`start()` brings it back on the same port and data directory, so a store that reconnects finds
its data where it left it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# The tests' own Redis database, not db 0, where a developer's own keys (and other tools')
# live: a run killed before its clean-up leaves its keys here, among the tests' only.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/11"

START_TIMEOUT_S = 30.0


class Throwaway(Protocol):
    url: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float = START_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        time.sleep(0.05)
    return False


# -- reachability ---------------------------------------------------------------------------
def postgres_reachable(url: str) -> str | None:
    """None when a connection works, else why not."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'tenure[postgres]')"
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    return None


def redis_reachable(url: str) -> str | None:
    try:
        import redis
    except ImportError:
        return "redis-py is not installed (pip install 'tenure[redis]')"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# -- PostgreSQL -----------------------------------------------------------------------------
def postgres_bin_dir() -> Path | None:
    """Where initdb and pg_ctl live: PATH first, then Debian's versioned directories."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").exists() and Path(candidate, "pg_ctl").exists():
            return Path(candidate)
    return None


def _as_server_user(argv: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; in containers the tests often do.
    if os.geteuid() != 0:
        return argv
    user = _unprivileged_user()
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", user, "--", *argv]
    return ["su", user, "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in argv)]


def _unprivileged_user() -> str:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


class ThrowawayPostgres:
    """A private PostgreSQL cluster in a temp dir on a free port (trust auth, user postgres)."""

    def __init__(self, bin_dir: Path | None = None, port: int | None = None) -> None:
        found = bin_dir or postgres_bin_dir()
        if found is None:
            raise RuntimeError("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
        self.bin_dir = found
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="tenure-pg-"))
        self.data_dir = self.root / "data"
        self.log_file = self.root / "server.log"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            user = pwd.getpwnam(_unprivileged_user())
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        )

    def _run(self, argv: list[str]) -> None:
        proc = subprocess.run(
            _as_server_user(argv), capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode != 0:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            raise RuntimeError(
                f"{Path(argv[0]).name} failed ({proc.returncode}): {proc.stderr.strip()}\n{log}"
            )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
            " -c max_connections=200"
        )
        self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
                "-o",
                options,
                "-w",
                "-t",
                str(int(START_TIMEOUT_S)),
                "start",
            ]
        )

    def stop(self, mode: str = "fast") -> None:
        """Take the server away; `mode="immediate"` is the closest to pulling the plug."""
        if not (self.data_dir / "postmaster.pid").exists():
            return
        self._run(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "stop"]
        )

    def kill(self) -> None:
        self.stop("immediate")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


# -- Redis ----------------------------------------------------------------------------------
class ThrowawayRedis:
    """A private redis-server on a free port; no persistence unless `appendonly=True`."""

    def __init__(self, *, appendonly: bool = False, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("no redis-server on PATH")
        self.binary = binary
        self.appendonly = appendonly
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="tenure-redis-"))
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.root),
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
            "--logfile",
            str(self.root / "server.log"),
        ]
        # Its own session, so a Ctrl-C aimed at pytest does not reach it before close().
        self.proc = subprocess.Popen(argv, start_new_session=True)
        if not wait_for_port(self.port):
            self.kill()
            log = (self.root / "server.log").read_text(errors="replace")
            raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")

    def stop(self) -> None:
        """SIGTERM: Redis flushes the append-only file (if on) and exits."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        self._end(signal.SIGKILL)

    def _end(self, sig: signal.Signals) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.proc = None

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres()
    try:
        server.start()
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def throwaway_redis(*, appendonly: bool = False) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(appendonly=appendonly)
    try:
        server.start()
        yield server
    finally:
        server.close()


# -- one fresh, isolated store per test -------------------------------------------------------
def with_query_param(url: str, key: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"


@contextlib.contextmanager
def isolated_store_url(kind: str, base_url: str, tmp_dir: Path) -> Iterator[str]:
    """A store URL nobody else uses: a new SQLite file, PostgreSQL schema or Redis prefix.

    `base_url` is the server's URL (ignored for sqlite); what the test leaves behind is
    dropped afterwards, so the shared servers do not fill up run after run.
    """
    # the pid says whose it is: a key or schema left by a run that was killed before its
    # clean-up (SIGKILL, a timeout's os._exit) names a process that is no longer alive
    tag = f"tenure_t_{os.getpid()}_{secrets.token_hex(5)}"
    if kind == "sqlite":
        yield f"sqlite:///{tmp_dir / 'tenure.db'}"
    elif kind == "postgres":
        try:
            yield with_query_param(base_url, "schema", tag)
        finally:  # also when the with-block or a fixture's teardown raised
            drop_postgres_schema(base_url, tag)
    elif kind == "redis":
        try:
            yield with_query_param(base_url, "prefix", tag)
        finally:
            drop_redis_prefix(base_url, tag)
    else:
        raise ValueError(f"store kind: expected sqlite, postgres or redis, got {kind!r}")


def drop_postgres_schema(base_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def drop_redis_prefix(base_url: str, prefix: str) -> None:
    client = raw_redis(base_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
    finally:
        client.close()


def raw_redis(url: str) -> Any:
    """redis-py's own client for a redis://, redis+cluster:// or redis+sentinel:// URL (the
    prefix= option ignored): what a test uses behind the store's back."""
    from tenure.stores.redis.connection import connect

    return connect(url).client

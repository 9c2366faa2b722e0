"""The topologies production runs, started on loopback from Debian's packages: PgBouncer in
transaction pooling before a PostgreSQL, a Redis Cluster of three masters, and a Redis master
with a replica watched by three Sentinels.

Each is a throwaway: its own temp dir and free ports, ended by close().
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from servers import (
    START_TIMEOUT_S,
    _as_server_user,
    _unprivileged_user,
    free_port,
    wait_for_port,
    with_query_param,
)


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    # Its own session, so a Ctrl-C aimed at pytest does not reach it before close().
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _end(proc: subprocess.Popen[bytes] | None, sig: signal.Signals = signal.SIGKILL) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


def _wait(condition: Callable[[], object], what: str, timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if condition():
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not happen within {timeout:g} s")


# -- PgBouncer ------------------------------------------------------------------------------
class ThrowawayPgBouncer:
    """PgBouncer in `pool_mode = transaction` in front of the PostgreSQL at `postgres_url`:
    a server connection is lent for one transaction at a time, as in most managed poolers."""

    def __init__(
        self, postgres_url: str, *, pool_size: int = 20, server_login_retry: int | None = None
    ) -> None:
        binary = shutil.which("pgbouncer") or (
            "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
        )
        if binary is None:
            raise RuntimeError("no pgbouncer on PATH (Debian: apt-get install pgbouncer)")
        target = urlsplit(postgres_url)
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="tenure-pgbouncer-"))
        user = target.username or "postgres"
        (self.root / "users.txt").write_text(f'"{user}" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={target.hostname or '127.0.0.1'} port={target.port or 5432}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            f"unix_socket_dir = {self.root}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 1000\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            # PgBouncer's default waits 15 s after a failed server login before the next try
            + (
                f"server_login_retry = {server_login_retry}\n"
                if server_login_retry is not None
                else ""
            )
            + f"admin_users = {user}\n"
            f"logfile = {self.root / 'pgbouncer.log'}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n"
        )
        self.binary = binary
        self.database = (target.path or "/postgres").lstrip("/") or "postgres"
        self.url = f"postgresql://{user}@127.0.0.1:{self.port}/{self.database}"
        self.admin_url = f"postgresql://{user}@127.0.0.1:{self.port}/pgbouncer"
        self.proc: subprocess.Popen[bytes] | None = None
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            owner = pwd.getpwnam(_unprivileged_user())
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, owner.pw_uid, owner.pw_gid)

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        argv = _as_server_user([self.binary, str(self.root / "pgbouncer.ini")])
        self.proc = _spawn(argv, self.root / "stdout.log")
        if not wait_for_port(self.port):
            self.close()
            raise RuntimeError(f"pgbouncer did not start on port {self.port}")

    def close(self) -> None:
        _end(self.proc)
        self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is a valid, free port too."""
    for _ in range(100):
        port = free_port()
        if port + 10_000 <= 65_535:
            with contextlib.suppress(OSError), socket.socket() as bus:
                bus.bind(("127.0.0.1", port + 10_000))
                return port
    raise RuntimeError("no free port pair (port, port + 10000) for a cluster node")


def through_pgbouncer(bouncer_url: str, direct_url: str) -> str:
    """A tenure URL for the store behind the pooler, LISTEN on a direct connection."""
    return with_query_param(
        with_query_param(bouncer_url, "pooler", "transaction"), "listen_url", direct_url
    )


# -- Redis Cluster --------------------------------------------------------------------------
class ThrowawayRedisCluster:
    """Three masters (`redis-server --cluster-enabled yes`) joined by `redis-cli --cluster
    create`, each owning a third of the 16,384 slots."""

    def __init__(self, masters: int = 3) -> None:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RuntimeError("no redis-server/redis-cli on PATH")
        self.binary, self.cli = binary, cli
        self.root = Path(tempfile.mkdtemp(prefix="tenure-redis-cluster-"))
        self.ports = [cluster_port() for _ in range(masters)]
        self.procs: list[subprocess.Popen[bytes]] = []
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.url = f"redis+cluster://{hosts}/0"

    def start(self) -> None:
        for port in self.ports:
            node = self.root / str(port)
            node.mkdir(exist_ok=True)
            argv = [
                self.binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(node),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
                "--save",
                "",
                "--appendonly",
                "no",
            ]
            self.procs.append(_spawn(argv, node / "server.log"))
        for port in self.ports:
            if not wait_for_port(port):
                self.close()
                raise RuntimeError(f"a cluster node did not start on port {port}")
        nodes = [f"127.0.0.1:{p}" for p in self.ports]
        create = subprocess.run(
            [self.cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if create.returncode != 0:
            self.close()
            raise RuntimeError(f"redis-cli --cluster create failed: {create.stdout}{create.stderr}")
        _wait(self._ok, "the cluster reaching cluster_state:ok")

    def _ok(self) -> bool:
        for port in self.ports:
            info = subprocess.run(
                [self.cli, "-p", str(port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
            if "cluster_state:ok" not in info:
                return False
        return True

    def close(self) -> None:
        for proc in self.procs:
            _end(proc)
        self.procs = []
        shutil.rmtree(self.root, ignore_errors=True)


# -- Redis Sentinel -------------------------------------------------------------------------
class ThrowawayRedisSentinel:
    """A master, one replica, and three Sentinels watching them as `mymaster`; `failover()`
    makes the replica the master (`SENTINEL FAILOVER`) and waits until every Sentinel says so."""

    MASTER_NAME = "mymaster"

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RuntimeError("no redis-server/redis-cli on PATH")
        self.binary, self.cli = binary, cli
        self.root = Path(tempfile.mkdtemp(prefix="tenure-redis-sentinel-"))
        self.master_port, self.replica_port = free_port(), free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.procs: list[subprocess.Popen[bytes]] = []
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        self.url = f"redis+sentinel://{hosts}/{self.MASTER_NAME}/0"

    def _server(self, port: int, *extra: str) -> None:
        node = self.root / str(port)
        node.mkdir(exist_ok=True)
        argv = [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(node)]
        argv += ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec", *extra]
        self.procs.append(_spawn(argv, node / "server.log"))

    def start(self) -> None:
        self._server(self.master_port)
        self._server(self.replica_port, "--replicaof", "127.0.0.1", str(self.master_port))
        for port in self.sentinel_ports:
            conf = self.root / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.root}\n"
                f"sentinel monitor {self.MASTER_NAME} 127.0.0.1 {self.master_port} 2\n"
                f"sentinel down-after-milliseconds {self.MASTER_NAME} 1000\n"
                f"sentinel failover-timeout {self.MASTER_NAME} 5000\n"
            )
            argv = [self.binary, str(conf), "--sentinel"]
            self.procs.append(_spawn(argv, self.root / f"sentinel-{port}.log"))
        for port in (self.master_port, self.replica_port, *self.sentinel_ports):
            if not wait_for_port(port):
                self.close()
                raise RuntimeError(f"a Sentinel topology process did not start on port {port}")
        _wait(lambda: self._replicas_seen() >= 1, "the Sentinels seeing the replica")
        # Started means replicating: a store with wait_replicas=1 refuses writes until the
        # replica has synced, so a first write right after start must not race the sync.
        _wait(self._replica_synced, "the replica's first sync with the master")

    def _replica_synced(self) -> bool:
        info = subprocess.run(
            [self.cli, "-p", str(self.replica_port), "info", "replication"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        return "master_link_status:up" in info

    def _sentinel(self, port: int, *args: str) -> str:
        return subprocess.run(
            [self.cli, "-p", str(port), "sentinel", *args],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout

    def _replicas_seen(self) -> int:
        return min(
            self._sentinel(p, "replicas", self.MASTER_NAME).count("flags")
            for p in self.sentinel_ports
        )

    def master(self) -> int:
        """The port every Sentinel names as the master's."""
        ports = {
            self._sentinel(p, "get-master-addr-by-name", self.MASTER_NAME).split()[-1]
            for p in self.sentinel_ports
        }
        if len(ports) != 1:
            raise RuntimeError(f"the Sentinels disagree on the master: {sorted(ports)}")
        return int(ports.pop())

    def failover(self) -> int:
        """Promote the replica; returns the new master's port."""
        old = self.master()
        # A Sentinel refuses (NOGOODSLAVE) until its last INFO of the replica shows a live
        # link to the master; ask again until it accepts.
        _wait(
            lambda: "OK" in self._sentinel(self.sentinel_ports[0], "failover", self.MASTER_NAME),
            "a Sentinel accepting the failover",
            timeout=60,
        )
        _wait(lambda: self.master() != old, "the Sentinel failover", timeout=60)
        return self.master()

    def close(self) -> None:
        for proc in self.procs:
            _end(proc)
        self.procs = []
        shutil.rmtree(self.root, ignore_errors=True)

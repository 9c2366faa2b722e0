"""Flow control's work per job, counted rather than timed (issue 31): the same drain as
`bench flow` (bench/flow.py), plain against limited and per key, with the engine's own
counters read around the drain alone, so a loaded machine changes no figure but CPU time.

    .venv/bin/python -m bench flow-work [--jobs 2000] [--rounds 3] [--engines sqlite,postgres,redis]

Per job drained:
- SQLite: statements sent (BEGIN and COMMIT included), WAL frames written (checkpoints off
  during the drain: every page a commit changed is a frame), and this process's CPU µs (SQLite
  runs in it).
- PostgreSQL: statements sent, and the CPU µs its server processes for this database spent
  (/proc/PID/schedstat of each backend, in ns; a database of this run's own, so no other
  client's backend is counted).
- Redis: commands the server ran (those inside scripts included) and server CPU µs, on a
  private redis-server started on a free port for the run (INFO is server-wide).

CPU figures move with the machine's load a little (caches, frequency); counts do not.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tenure.stores import open_store

from bench.flow import counting, drain, guards, new_job
from bench.redis_work import METER_COMMANDS, free_port, snapshot, wait_until_answering

CASES = ("plain", "limited", "per key")
Meter = Callable[[], dict[str, float]]


@contextmanager
def private_redis(workdir: Path) -> Iterator[str]:
    """A redis-server of this run's own, on a free port, gone after."""
    port = free_port()
    server = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        import redis

        client = redis.Redis(port=port)
        wait_until_answering(client, timeout_s=10, poll_s=0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)


def backend_cpu_ns(admin: psycopg.Connection[Any], database: str) -> int:
    """CPU ns of every server process now connected to `database` (its pool's backends)."""
    pids = [
        row[0]
        for row in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchall()
    ]
    total = 0
    for pid in pids:
        # a backend that left between the read of the list and its file counts nothing
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    return total


def wal_frames(path: Path) -> int:
    size = path.with_name(path.name + "-wal").stat().st_size
    return max(size - 32, 0) // (24 + 4096)


def one_drain(engine: str, case: str, url: str, args: argparse.Namespace) -> dict[str, float]:
    """Fill a fresh store, then drain it with the engine's counters read around the drain."""
    store = open_store(url)
    try:
        store.migrate()
        jobs = [new_job(guards(case, i, args)) for i in range(args.jobs)]
        for at in range(0, len(jobs), 500):
            store.enqueue_many(jobs[at : at + 500])
        if engine == "postgres":  # the enqueue's backends go, and their statistics with them
            store.close()
            store = open_store(url)
            blocks_before = settled_blocks(url)
        before, after = measure(engine, store, url)
        b = before()
        _, sent = drain(store, args.jobs, args.slots)
        a = after()
        out = {name: (a[name] - b[name]) / args.jobs for name in a}
        out["statements"] = sent
        if engine == "postgres":
            store.close()
            out["buffers"] = (settled_blocks(url) - blocks_before) / args.jobs
        return out
    finally:
        store.close()


def settled_blocks(url: str) -> int:
    """Shared buffers read or hit in the run's database (pg_stat_database), once every backend
    that used them has left: a backend sends its statistics at exit at the latest. The
    database is this run's own, so no other client is counted; unlike time, a load-free count
    of the executor's page visits."""
    database = url.split("?", 1)[0].rsplit("/", 1)[1]
    with psycopg.connect(
        url.split("?", 1)[0].rsplit("/", 1)[0] + "/postgres", autocommit=True
    ) as admin:
        deadline = time.monotonic() + 10
        while (
            admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchone()[0]
            and time.monotonic() < deadline
        ):  # type: ignore[index]
            time.sleep(0.05)
        time.sleep(0.2)  # an exiting backend reports just before it is gone
        admin.execute("SELECT pg_stat_clear_snapshot()")
        row = admin.execute(
            "SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
        return int(row[0]) if row else 0


def measure(engine: str, store: Any, url: str) -> tuple[Meter, Meter]:
    """(read before, read after): the engine's counters, as cumulative figures."""
    if engine == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        raw = sqlite3.connect(path)

        def sqlite_before() -> dict[str, float]:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            for conn in (raw,):
                conn.execute("PRAGMA wal_autocheckpoint=0")
            store.db.checked_conn().execute("PRAGMA wal_autocheckpoint=0")
            return {"wal frames": 0.0, "cpu µs": time.process_time() * 1e6}

        def sqlite_after() -> dict[str, float]:
            return {"wal frames": float(wal_frames(path)), "cpu µs": time.process_time() * 1e6}

        return sqlite_before, sqlite_after
    if engine == "postgres":
        database = url.split("?", 1)[0].rsplit("/", 1)[1]
        # autocommit: a transaction would read pg_stat_activity once, as it was at first
        admin = psycopg.connect(
            url.split("?", 1)[0].rsplit("/", 1)[0] + "/postgres", autocommit=True
        )

        def pg() -> dict[str, float]:
            return {"server cpu µs": backend_cpu_ns(admin, database) / 1e3}

        return pg, pg
    import redis

    client = redis.Redis.from_url(url.split("?", 1)[0])

    def rd() -> dict[str, float]:
        snap = snapshot(client)
        calls = sum(c for name, (c, _) in snap["cmd"].items() if name not in METER_COMMANDS)
        return {"commands": float(calls), "server cpu µs": snap["cpu_s"] * 1e6}

    return rd, rd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/tenure_bench_flow",
        help="a database of this run's own (created if missing; schemas dropped after)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, counting():
        for engine in args.engines.split(","):
            with engine_urls(engine, Path(tmp), args) as fresh:
                figures: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
                for r in range(args.rounds):
                    for case in CASES if r % 2 == 0 else tuple(reversed(CASES)):
                        figures[case].append(one_drain(engine, case, fresh(), args))
                report(engine, figures)
    return 0


@contextmanager
def engine_urls(
    engine: str, workdir: Path, args: argparse.Namespace
) -> Iterator[Callable[[], str]]:
    """A maker of fresh store URLs for `engine`, on stores of this run's own."""
    counter = iter(range(10**6))
    if engine == "sqlite":
        yield lambda: f"sqlite:///{workdir / f'flow{next(counter)}.db'}"
    elif engine == "postgres":
        server, database = args.postgres.rsplit("/", 1)
        with psycopg.connect(server + "/postgres", autocommit=True) as admin:
            if not admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
            ).fetchone():
                admin.execute(f'CREATE DATABASE "{database}"')
        schemas: list[str] = []

        def fresh_pg() -> str:
            schemas.append(f"flow{next(counter)}_{int(time.time())}")
            return f"{args.postgres}?schema={schemas[-1]}"

        try:
            yield fresh_pg
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                for schema in schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        with private_redis(workdir) as url:
            yield lambda: f"{url}?prefix=flow{next(counter)}"


def report(engine: str, figures: dict[str, list[dict[str, float]]]) -> None:
    names = list(figures["plain"][0])
    for case in CASES:
        cells = []
        for name in names:
            values = [f[name] for f in figures[case]]
            plain = statistics.median(f[name] for f in figures["plain"])
            cells.append(
                f"{name} {statistics.median(values):8.2f} ({min(values):.2f}..{max(values):.2f};"
                f" {statistics.median(values) / plain if plain else 0:5.2f}x plain)"
            )
        print(f"{engine:9} {case:8} per job: " + ";  ".join(cells), flush=True)

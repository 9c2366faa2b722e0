"""Retention under load: jobs pushed through a store at a steady rate while the workers' own
sweep prunes them, with retention on and with it off, on each engine.

    nice -n 19 .venv/bin/python -m bench retention [--engines sqlite,postgres,redis]
        [--jobs N] [--rate JOBS_PER_S | --rate sqlite=2000,postgres=1000,redis=2000]
        [--keep S] [--round-jobs N] [--off-share F] [--consumers N] [--sample S]
        [--vacuum S] [--max-minutes M]

Per engine there are two stores side by side: "on" (keep_succeeded = keep_failed = --keep
seconds) and "off" (None: kept forever). They take turns in rounds, on then off, so that load
from the rest of the machine falls on both: an on round pushes --round-jobs jobs through the
on store, an off round --off-share of that through the off store, until the on store has seen
--jobs jobs. Keep --off-share at 1 when the rate is above what the consumers drain: a round
ends when its queue is empty, and a longer round builds a deeper queue (a bigger ready index)
that would be charged to its mode. In a round one producer thread dispatches at --rate per
second (a slice every 50 ms), --consumers threads drain as fast as the store lets them through
the worker's hot path (reserve, then end_attempt after end_attempt), and a
sweeper calls the worker's own `Sweeper.tick()` on the worker's rescue cadence (every 5 s, a
30 s lease; the Sweeper's own thread goes on while chunks come back full); the off store's
sweeper runs too and finds nothing due, as a worker with retention off does. A store resting
while the other runs keeps its clock: its jobs come due meanwhile, and the next round's sweeps
delete them, so the on store's pruning is all done in its own rounds.

Every --sample seconds of a round it records the running store's size: the SQLite file after a
TRUNCATE checkpoint, the PostgreSQL schema's relation sizes (pg_total_relation_size, indexes
and TOAST included), Redis `used_memory` (each Redis store is a redis-server of its own,
started here without persistence, so no other key is counted). Deleted PostgreSQL rows become
reusable space only once vacuumed: on a server with autovacuum off, --vacuum S runs a plain
VACUUM of the running store's schema every S seconds, in both modes.

Reported per engine: the on store's size against its active seconds (flat after the first
retention window when pruning keeps up) and as each on round ended (its queue drained), the
drain throughput (jobs per second of time the consumers spent in store calls that moved a job:
the capacity left beside the producer) on against off, over the run and round pair by round
pair, and the latency of the reserve / end_attempt calls (median, p99, worst) in each
mode: the worst is a call that waited on a prune chunk or on the sampler's checkpoint.
--max-minutes cuts an engine's run short (the report says how many jobs went through).
Results: bench/results/retention.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tenure
from tenure.core.records import Ending, WorkerRef
from tenure.worker.leases import Sweeper

BENCH = Path(__file__).resolve().parent
SCHEMA = "tenure_bench_retention"
WORKER = WorkerRef(id="bench-retention", host="bench", pid=os.getpid())
SWEEP_EVERY_S = 5.0  # the worker's rescue tick at its default 30 s lease
LEASE_S = 30.0
STEP_S = 0.05
POSTGRES_URL = os.environ.get(
    "BENCH_RETENTION_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@dataclass
class Side:
    """One of an engine's two stores (retention on or off) and what its rounds measured."""

    engine: str
    keep: float | None
    url: str
    schema: str = ""
    jobs: int = 0  # through this store so far
    active_s: float = 0.0  # seconds of its own rounds
    busy_s: float = 0.0
    calls_ms: array = field(default_factory=lambda: array("d"))
    sizes: list[tuple[float, int, int, int]] = field(default_factory=list)
    rounds: list[dict[str, float]] = field(default_factory=list)
    app: Any = None
    noop: Any = None
    sweeper: Any = None
    vacuumed_at: float = 0.0


class RedisServer:
    """A redis-server of the bench's own (no persistence), so used_memory is one store's."""

    def __init__(self, workdir: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        binary = shutil.which("redis-server") or "redis-server"
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(workdir)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def make_side(engine: str, keep: float | None, workdir: Path, servers: list[RedisServer]) -> Side:
    mode = "on" if keep is not None else "off"
    if engine == "sqlite":
        path = workdir / f"retention-{mode}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return Side(engine, keep, f"sqlite:///{path}")
    if engine == "postgres":
        import psycopg

        schema = f"{SCHEMA}_{mode}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        return Side(engine, keep, f"{POSTGRES_URL}?schema={schema}", schema=schema)
    server = RedisServer(workdir)
    servers.append(server)
    return Side(engine, keep, f"redis://127.0.0.1:{server.port}/0")


def store_size(side: Side) -> int:
    store: Any = side.app.store
    if side.engine == "sqlite":
        store.db.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return os.path.getsize(store.path)
    if side.engine == "postgres":
        with store.db.transaction() as cur:
            row = cur.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (side.schema,),
            ).fetchone()
        return int(row["n"])
    return int(store.db.client.info("memory")["used_memory"])


def vacuum(schema: str) -> None:
    """A plain VACUUM (not FULL) of the schema's tables: dead rows become reusable space."""
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'VACUUM "{schema}"."{table}"')


def run_round(side: Side, jobs: int, rate: float, args: argparse.Namespace) -> None:
    """Push `jobs` jobs through the side's store at `rate`, sweeping and sampling meanwhile."""

    noop = side.noop
    done = threading.Event()
    produced_all = threading.Event()
    lock = threading.Lock()
    produced = consumed = 0
    busy = 0.0
    base = side.jobs

    def produce() -> None:
        nonlocal produced
        per_step = max(1, round(rate * STEP_S))
        start = time.monotonic()
        while produced < jobs:
            n = min(per_step, jobs - produced)
            noop.dispatch_many([(base + produced + i,) for i in range(n)])
            produced += n
            delay = start + (produced / rate) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        produced_all.set()

    def consume() -> None:
        nonlocal consumed, busy
        own = tenure.App(side.url, keep_succeeded=side.keep, keep_failed=side.keep).store
        held = None
        calls = array("d")
        mine = spent_busy = 0.0
        while True:
            t0 = time.perf_counter()
            if held is None:
                got = own.reserve(queues=["default"], worker=WORKER, lease=LEASE_S, limit=1)
                held = got[0] if got else None
            else:
                _, held = own.end_attempt(
                    Ending(job_id=held.job_id, token=held.token),
                    queues=["default"],
                    worker=WORKER,
                    lease=LEASE_S,
                )
                mine += 1
            spent = time.perf_counter() - t0
            calls.append(spent * 1000)
            if held is not None:
                spent_busy += spent
                continue
            with lock:
                consumed += int(mine)
                busy += spent_busy
                mine = spent_busy = 0.0
                finished = produced_all.is_set() and consumed >= jobs
            if finished:
                break
            own.wait_for_work(queues=["default"], timeout=STEP_S)
        own.close()
        with lock:
            side.calls_ms.extend(calls)

    def sweep() -> None:
        while not done.wait(SWEEP_EVERY_S):
            side.sweeper.tick()

    def sample() -> None:
        while not done.wait(args.sample):
            now = time.monotonic()
            if side.engine == "postgres" and args.vacuum and now - side.vacuumed_at >= args.vacuum:
                vacuum(side.schema)  # what autovacuum does on a server where it is on
                side.vacuumed_at = time.monotonic()
            stored = sum(side.app.counts().values())
            with lock:
                through = base + consumed
            at = side.active_s + time.monotonic() - started
            side.sizes.append((round(at, 1), through, store_size(side), stored))

    workers = [threading.Thread(target=produce, daemon=True)]
    workers += [threading.Thread(target=consume, daemon=True) for _ in range(args.consumers)]
    helpers = [threading.Thread(target=f, daemon=True) for f in (sweep, sample)]
    started = time.monotonic()
    for t in (*workers, *helpers):
        t.start()
    for t in workers:
        t.join()
    elapsed = time.monotonic() - started
    done.set()
    for t in helpers:
        t.join(timeout=120)
    side.jobs += consumed
    side.active_s += elapsed
    side.busy_s += busy
    side.rounds.append(
        {
            "jobs": consumed,
            "elapsed_s": round(elapsed, 2),
            "drain_jobs_per_busy_s": round(consumed / busy, 1) if busy else 0.0,
            "load_1m": os.getloadavg()[0],
            # the queue drained: what is left is what retention keeps (and dead space)
            "end_bytes": store_size(side),
            "end_rows": sum(side.app.counts().values()),
        }
    )


def noop(n: int) -> None: ...


def rate_for(engine: str, spec: str) -> float:
    """--rate: one figure for every engine, or engine=figure pairs."""
    if "=" not in spec:
        return float(spec)
    rates = dict(pair.split("=", 1) for pair in spec.split(","))
    return float(rates[engine])


def run_engine(engine: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    rate = rate_for(engine, args.rate)
    servers: list[RedisServer] = []
    sides = [
        make_side(engine, args.keep, workdir, servers),
        make_side(engine, None, workdir, servers),
    ]
    on, off = sides
    deadline = time.monotonic() + args.max_minutes * 60
    try:
        for side in sides:
            side.app = tenure.App(side.url, keep_succeeded=side.keep, keep_failed=side.keep)
            side.app.migrate()
            side.noop = side.app.job(name="noop")(noop)
            side.sweeper = Sweeper(tenure.App(side.url).store)
        off_jobs = max(1, round(args.round_jobs * args.off_share))
        while on.jobs < args.jobs and time.monotonic() < deadline:
            run_round(on, min(args.round_jobs, args.jobs - on.jobs), rate, args)
            print(f"  {engine} on:  {on.jobs:,} jobs, {on.rounds[-1]}", flush=True)
            run_round(off, off_jobs, rate, args)
            print(f"  {engine} off: {off.jobs:,} jobs, {off.rounds[-1]}", flush=True)
        final = {id(side): store_size(side) for side in sides}
    finally:
        for side in sides:
            if side.app is not None:
                side.sweeper.store.close()
                side.app.close()
        for server in servers:
            server.stop()
        if engine == "postgres":
            import psycopg

            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                for side in sides:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{side.schema}" CASCADE')
    modes = {name: summary(side, final[id(side)]) for name, side in (("on", on), ("off", off))}
    drop = 1 - modes["on"]["drain_jobs_per_busy_s"] / modes["off"]["drain_jobs_per_busy_s"]
    pairs = round_pairs(on.rounds, off.rounds)
    return {
        "rate": rate,
        **modes,
        "drain_drop": round(drop, 4),
        "pair_drops": [round(p, 4) for p in pairs],
        "pair_drop_median": round(statistics.median(pairs), 4) if pairs else None,
        "flat": flatness(on, args.keep),
        "cut_short": on.jobs < args.jobs,
    }


def round_pairs(on: list[dict[str, Any]], off: list[dict[str, Any]]) -> list[float]:
    """Each on round's drain against the off round right after it (the load they shared)."""
    return [
        1 - a["drain_jobs_per_busy_s"] / b["drain_jobs_per_busy_s"]
        for a, b in zip(on, off, strict=False)
        if a["drain_jobs_per_busy_s"] and b["drain_jobs_per_busy_s"]
    ]


def summary(side: Side, final: int) -> dict[str, Any]:
    ordered = sorted(side.calls_ms)
    return {
        "keep_s": side.keep,
        "jobs": side.jobs,
        "active_s": round(side.active_s, 1),
        "drain_jobs_per_busy_s": round(side.jobs / side.busy_s, 1) if side.busy_s else 0.0,
        "rounds": side.rounds,
        "call_ms_median": round(statistics.median(ordered), 3) if ordered else None,
        "call_ms_p99": round(ordered[int(len(ordered) * 0.99)], 2) if ordered else None,
        "call_ms_max": round(ordered[-1], 2) if ordered else None,
        "sizes": side.sizes,
        "final_bytes": final,
    }


def flatness(on: Side, keep: float) -> dict[str, Any]:
    """The on store's size once its first retention window (and a prune period) has passed:
    the least and the most bytes, and the last quarter's median against the first quarter's."""
    ends = [(r["end_bytes"], r["end_rows"]) for r in on.rounds]
    after = [s for s in on.sizes if s[0] > 2 * keep + 10]
    if len(after) < 4:
        return {"samples": len(after), "round_ends": ends}
    quarter = max(1, len(after) // 4)
    first = statistics.median(s[2] for s in after[:quarter])
    last = statistics.median(s[2] for s in after[-quarter:])
    return {
        "samples": len(after),
        "min_bytes": min(s[2] for s in after),
        "max_bytes": max(s[2] for s in after),
        "max_rows": max(s[3] for s in after),
        "last_quarter_over_first": round(last / first, 3),
        "round_ends": ends,  # (bytes, rows) once each on round's queue drained
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench retention",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rate", default="sqlite=2000,postgres=1000,redis=2000")
    parser.add_argument("--keep", type=float, default=30.0, help="keep_succeeded, seconds")
    parser.add_argument("--round-jobs", type=int, default=50_000, help="jobs per on round")
    parser.add_argument("--off-share", type=float, default=1.0, help="off round / on round")
    parser.add_argument("--consumers", type=int, default=1, help="draining threads")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between size samples")
    parser.add_argument("--max-minutes", type=float, default=20.0, help="per engine")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print the results in bench/results/retention.json as a report section; run none",
    )
    parser.add_argument(
        "--vacuum",
        type=float,
        default=0.0,
        help="PostgreSQL: VACUUM the running schema every S seconds, for autovacuum off",
    )
    args = parser.parse_args(argv)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    path = out / "retention.json"
    if args.markdown:
        print(markdown(json.loads(path.read_text())))
        return 0
    results: dict[str, Any] = {"args": vars(args), "engines": {}}
    if path.exists():  # one engine at a time: keep the others' results
        results["engines"] = json.loads(path.read_text()).get("engines", {})
    if "postgres" in args.engines:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            results["postgres_autovacuum"] = str(conn.execute("SHOW autovacuum").fetchone()[0])
    with tempfile.TemporaryDirectory(prefix="tenure-bench-retention-") as tmp:
        for engine in args.engines.split(","):
            got = run_engine(engine, args, Path(tmp))
            got["args"] = vars(args)
            results["engines"][engine] = got
            print_engine(engine, got)
            if path.exists():  # another engine's run may have finished meanwhile
                kept = json.loads(path.read_text()).get("engines", {})
                results["engines"] = {**kept, **results["engines"]}
            path.write_text(json.dumps(results, indent=2))
            (out / f"retention-{engine}.json").write_text(json.dumps(got, indent=2))
    print(f"results: {path}")
    return 0


def print_engine(engine: str, got: dict[str, Any]) -> None:
    on, off = got["on"], got["off"]
    print(f"\n== {engine}: {on['jobs']:,} jobs at {got['rate']:,.0f}/s, keep {on['keep_s']} s")
    print("  active s   jobs through   size (KiB)   rows stored")
    for at, through, size, stored in on["sizes"][:: max(1, len(on["sizes"]) // 25)]:
        print(f"  {at:8.0f}  {through:13,}  {size / 1024:11,.0f}  {stored:12,}")
    for name, r in (("on", on), ("off", off)):
        print(
            f"  retention {name:3}: {r['jobs']:,} jobs, drain {r['drain_jobs_per_busy_s']} jobs/"
            f"busy s, call median {r['call_ms_median']} ms p99 {r['call_ms_p99']} ms max "
            f"{r['call_ms_max']} ms, final size {r['final_bytes'] / 1024:,.0f} KiB"
        )
    print(f"  on store after its first window: {got['flat']}")
    print(f"  drain throughput with retention on: {-got['drain_drop']:+.1%} against off")
    if got["pair_drop_median"] is not None:
        print(f"  round by round (on, then off): median {-got['pair_drop_median']:+.1%}")


def markdown(results: dict[str, Any]) -> str:
    """A table per run: each engine's on store's size once its first window passed, and the
    drain throughput and call latency on against off."""
    lines = [
        "| engine | jobs on / off | rate /s | on store after its first window "
        "(min-max, rows at most) | last ÷ first quarter | drain on / off, jobs per busy s "
        "| on against off (all; median of round pairs) | call p99 / max on, ms | off, ms "
        "| load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for engine, got in results["engines"].items():
        on, off, flat = got["on"], got["off"], got["flat"]
        pairs = got.get("pair_drops") or round_pairs(on["rounds"], off["rounds"])
        loads = [r["load_1m"] for r in on["rounds"] + off["rounds"]]
        size = (
            f"{flat['min_bytes'] / 2**20:,.1f}-{flat['max_bytes'] / 2**20:,.1f} MiB, "
            f"{flat['max_rows']:,}"
            if "min_bytes" in flat
            else "too few samples"
        )
        lines.append(
            f"| {engine} | {on['jobs']:,} / {off['jobs']:,}"
            f"{' (cut short)' if got.get('cut_short') else ''} | {got['rate']:,.0f} | {size} | "
            f"{flat.get('last_quarter_over_first', '—')} | {on['drain_jobs_per_busy_s']:,.0f} / "
            f"{off['drain_jobs_per_busy_s']:,.0f} | {-got['drain_drop']:+.1%}; "
            f"{-statistics.median(pairs):+.1%} | "
            f"{on['call_ms_p99']} / {on['call_ms_max']} | {off['call_ms_p99']} / "
            f"{off['call_ms_max']} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    lines.append("")
    for engine, got in results["engines"].items():
        ends = got["flat"].get("round_ends") or [
            (r["end_bytes"], r["end_rows"]) for r in got["on"]["rounds"] if "end_bytes" in r
        ]
        if ends:
            shown = ", ".join(f"{b / 2**20:,.1f} MiB ({n:,} rows)" for b, n in ends)
            lines.append(f"- {engine}, the on store as each on round ended: {shown}")
        pairs = got.get("pair_drops") or round_pairs(got["on"]["rounds"], got["off"]["rounds"])
        if pairs:
            shown = ", ".join(f"{-p:+.1%}" for p in pairs)
            lines.append(f"- {engine}, drain on against off, round pair by round pair: {shown}")
    return "\n".join(lines)

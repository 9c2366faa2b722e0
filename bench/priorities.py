"""Reservation with priorities (issue 19): a deep queue of jobs in mixed priorities against the
same queue in one priority, on each store. Reservation must stay an index lookup: reserve
latency and drain rate within 10% of the single-priority case.

    .venv/bin/python -m bench.priorities [--jobs 1000000] [--drain 5000] [--rounds 2]
                                         [--engines sqlite,postgres,redis]

Per engine and case, a fresh store is filled with --jobs queued jobs (in bulk, 10,000 per
enqueue_many), then --drain of them are taken the way a busy worker takes them: one reserve,
then end_attempt after end_attempt, in this process, no job code run. Reported:
that call's latency (p50, p95) and the drain rate; cases interleaved A B B A so drift cancels.
Mixed = priorities drawn from -2..2 (uniform); single = all 0. For the SQL stores the plan of
the reservation's statement is printed (EXPLAIN) after the fill.

Latency and rate are wall-clock figures: on a shared machine one load spike during a few
seconds of drain decides them. So each case also reports figures that do not follow the load:
this process's CPU time per job and, on Redis, the server's own work per job (INFO
commandstats and INFO cpu read before and after the drain: microseconds inside the scripts,
server CPU, Redis commands run by the scripts). These are server-wide counters, so point
BENCH_REDIS_URL at a server nobody else uses while it runs.
"""

from __future__ import annotations

import argparse
import random
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores import Store, open_store

from bench.engines import POSTGRES_URL, REDIS_URL

WORKER = WorkerRef(id="bench-priorities", host="bench", pid=0)
CHUNK = 10_000
POLICY = Policy()
PAYLOAD = '{"args":[1],"kwargs":{}}'


def fresh_url(engine: str, workdir: Path) -> str:
    tag = f"tenure_prio_{secrets.token_hex(4)}"
    if engine == "sqlite":
        return f"sqlite:///{workdir / (tag + '.db')}"
    if engine == "postgres":
        return f"{POSTGRES_URL}?schema={tag}"
    return f"{REDIS_URL}?prefix={tag}"


def fill(store: Store, jobs: int, mixed: bool, rng: random.Random) -> None:
    for start in range(0, jobs, CHUNK):
        store.enqueue_many(
            [
                NewJob(
                    id=secrets.token_hex(8),
                    name="noop",
                    queue="default",
                    payload=PAYLOAD,
                    policy=POLICY,
                    priority=rng.randint(-2, 2) if mixed else 0,
                )
                for _ in range(min(CHUNK, jobs - start))
            ]
        )


def server_work(url: str) -> dict[str, float]:
    """Redis: the server's counters that grow with the work it does, not with the load."""
    if not url.startswith("redis"):
        return {}
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    stats, cpu = client.info("commandstats"), client.info("cpu")
    client.close()
    scripts = [v for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval")]
    return {
        "script_calls": sum(v["calls"] for v in scripts),
        "script_usec": sum(v["usec"] for v in scripts),
        "commands": sum(v["calls"] for v in stats.values()),
        "cpu_usec": (cpu["used_cpu_user"] + cpu["used_cpu_sys"]) * 1e6,
    }


def drain(store: Store, url: str, count: int) -> tuple[list[float], float, dict[str, float]]:
    (held,) = store.reserve(queues=["default"], worker=WORKER, lease=60)
    calls: list[float] = []
    before, cpu = server_work(url), time.process_time()
    began = time.perf_counter()
    for _ in range(count):
        t = time.perf_counter()
        _, following = store.end_attempt(
            Ending(job_id=held.job_id, token=held.token),
            queues=["default"],
            worker=WORKER,
            lease=60,
        )
        calls.append(time.perf_counter() - t)
        if following is None:
            break
        held = following
    rate = len(calls) / (time.perf_counter() - began)
    work = {"client_usec": (time.process_time() - cpu) * 1e6}
    work.update({k: v - before[k] for k, v in server_work(url).items()})
    # per job taken; the script's commands less the scripts themselves
    per_job = {k: v / len(calls) for k, v in work.items()}
    if "commands" in per_job:
        per_job["commands"] -= per_job["script_calls"]
    return calls, rate, per_job


def explain(store: Store, url: str) -> str:
    """The plan of the ready-job lookup a reservation makes (SQL stores)."""
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        rows = conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM tenure_jobs"
            " INDEXED BY tenure_jobs_ready_by_priority WHERE queue = 'default'"
            " AND state = 'queued' AND run_at <= 1e12 ORDER BY priority, run_at, rowid LIMIT 1"
        ).fetchall()
        conn.close()
        return "; ".join(str(r[-1]) for r in rows)
    if url.startswith("postgres"):
        import psycopg

        schema = url.rsplit("schema=", 1)[1]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'ANALYZE "{schema}".tenure_jobs')
            rows = conn.execute(
                f'EXPLAIN SELECT id FROM "{schema}".tenure_jobs WHERE priority_queue = %s'
                " AND run_at <= date_part('epoch', clock_timestamp())"
                " ORDER BY priority, run_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED",
                ("default",),
            ).fetchall()
        return " | ".join(r[0].strip() for r in rows)
    return ""


def drop(url: str) -> None:
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{url.rsplit("schema=", 1)[1]}" CASCADE')
    elif url.startswith("redis"):
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{url.rsplit('prefix=', 1)[1]}:*", count=10_000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        client.close()


def one_case(engine: str, workdir: Path, args: argparse.Namespace, mixed: bool) -> tuple:
    url = fresh_url(engine, workdir)
    store = open_store(url)
    store.migrate()
    try:
        fill(store, args.jobs, mixed, random.Random(7))
        plan = f"{'mixed' if mixed else 'single'}: {explain(store, url)}"
        calls, rate, work = drain(store, url, args.drain)
    finally:
        store.close()
        drop(url)
    return calls, rate, work, plan


# per job taken: (name, unit)
WORK_LABELS = {
    "client_usec": ("client CPU", "us"),
    "script_usec": ("in scripts", "us"),
    "cpu_usec": ("server CPU", "us"),
    "commands": ("Redis commands", ""),
}


def median_work(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0] if k in WORK_LABELS}


def describe_work(rounds: list[dict[str, float]]) -> str:
    """Per job taken, median over the rounds: the figures a load spike does not move much."""
    figures = median_work(rounds).items()
    return ", ".join(f"{WORK_LABELS[k][0]} {v:.1f} {WORK_LABELS[k][1]}".strip() for k, v in figures)


def by_round(rounds: list[dict[str, float]], key: str) -> str:
    """One figure of every round, in run order: how far the rounds spread."""
    return " ".join(f"{r[key]:.0f}" for r in rounds)


def work_ratios(works: dict[bool, list[dict[str, float]]]) -> str:
    single, mixed = median_work(works[False]), median_work(works[True])
    return ", ".join(f"{WORK_LABELS[k][0]} {mixed[k] / single[k]:.2f}" for k in single if single[k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1_000_000, help="queued jobs per case")
    parser.add_argument("--drain", type=int, default=5_000, help="jobs taken per case")
    parser.add_argument("--rounds", type=int, default=2, help="A B B A pairs")
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tenure-prio-") as tmp:
        for engine in args.engines.split(","):
            got: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
            works: dict[bool, list[dict[str, float]]] = {False: [], True: []}
            plans: set[str] = set()
            for r in range(args.rounds):
                for mixed in (False, True) if r % 2 == 0 else (True, False):
                    calls, rate, work, plan = one_case(engine, Path(tmp), args, mixed)
                    got[mixed][0].extend(calls)
                    got[mixed][1].append(rate)
                    works[mixed].append(work)
                    if not plan.endswith(": "):
                        plans.add(plan)
            print(f"{engine}: {args.jobs:,} queued, {args.drain:,} taken per case")
            for mixed in (False, True):
                ms = sorted(x * 1000 for x in got[mixed][0])
                p95 = ms[round(0.95 * (len(ms) - 1))]
                print(
                    f"  {'mixed -2..2' if mixed else 'single (0)':12} end_attempt"
                    f" p50 {statistics.median(ms):.3f} ms, p95 {p95:.3f} ms;"
                    f" drain {statistics.median(got[mixed][1]):,.0f} jobs/s"
                )
                print(f"  {'':12} per job: {describe_work(works[mixed])}")
                if "cpu_usec" in works[mixed][0]:
                    print(
                        f"  {'':12} server CPU us per job, by round:",
                        by_round(works[mixed], "cpu_usec"),
                    )
            single, mixed_rate = (statistics.median(got[m][1]) for m in (False, True))
            print(f"  mixed / single drain = {mixed_rate / single:.2f}")
            print(f"  mixed / single work per job: {work_ratios(works)}")
            for plan in sorted(plans):
                print(f"  plan: {plan}")


if __name__ == "__main__":
    main()

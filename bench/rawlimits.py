"""The raw engine limits, for context: what the engine itself allows for the calls tenure makes.

- Redis: `redis-benchmark` for the commands tenure's Lua scripts use (EVALSHA of a script
  doing TIME + HSET + ZADD, HMGET, ZRANGEBYSCORE), with 1 client (what one worker's connection
  sees: bound by round trips) and 50 clients (what the server can do).
- PostgreSQL: `pgbench` running tenure's reserve (SKIP LOCKED, claim, open the attempt) and
  complete (close job and attempt) statements on tenure's own schema, 1 and 2 clients.
- Both and SQLite: tenure's own store calls in a loop (reserve then complete, no worker, no
  child process): the ceiling a worker could reach if all its own overhead were gone.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench import engines

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent

SCRIPT = (
    "local t = redis.call('TIME'); redis.call('HSET', KEYS[1], 'state', 'running', 'lease', t[1]);"
    " redis.call('ZADD', KEYS[2], t[1], KEYS[1]); return t[1]"
)

STORE_LOOP = """
import sys, time
import tenure
from tenure.core.records import Ending, WorkerRef
app = tenure.App(sys.argv[1])
@app.job
def noop(n): pass
jobs, limit = int(sys.argv[2]), int(sys.argv[3])
noop.dispatch_many([(n,) for n in range(jobs)])
store, me = app.store, WorkerRef(id="w-bench", host="bench", pid=1)
start, done, cpu = time.perf_counter(), 0, time.process_time()
if limit == 0:  # a busy worker's hot path: each success claims the next job in the same call
    held = store.reserve(queues=["default"], worker=me, lease=30, limit=1)[0]
    while held is not None:
        _, held = store.end_attempt(
            Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=me, lease=30
        )
        done += 1
while done < jobs:
    got = store.reserve(queues=["default"], worker=me, lease=30, limit=limit)
    if not got:
        break
    for r in got:
        store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    done += len(got)
# jobs/s, then CPU microseconds per job (what a shared machine's other load does not change)
print(done / (time.perf_counter() - start), 1e6 * (time.process_time() - cpu) / done)
app.close()
"""


def measure(engine_names: list[str], *, smoke: bool, workdir: Path) -> dict[str, Any]:
    lines: list[str] = []
    jobs = 300 if smoke else 5_000
    lines += [
        "tenure's own store calls, no worker (one connection: `reserve` then `complete` per "
        "job; `limit=10` claims ten jobs per reserve round trip, as batched reservation would; "
        "`end_attempt` records a success and claims the next job in one call, the "
        "worker's hot path):",
        "",
        "| engine | reserve 1 + complete (jobs/s) | reserve 10 + complete (jobs/s) "
        "| end_attempt (jobs/s) |",
        "|---|---|---|---|",
    ]
    for name in engine_names:
        engine = engines.make(name, workdir)
        figures = []
        for limit in (1, 10, 0):
            engine.reset()
            proc = subprocess.run(
                [sys.executable, "-c", STORE_LOOP, engine.url_for("tenure"), str(jobs), str(limit)],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            ok = proc.returncode == 0
            figures.append(f"{float(proc.stdout.split()[0]):,.0f}" if ok else "failed")
        lines.append(f"| {name} | {' | '.join(figures)} |")
    lines.append("")
    from bench import raw_loops  # it imports STORE_LOOP from here

    lines += raw_loops.measure(
        [n for n in engine_names if n in raw_loops.ENGINES],
        jobs=jobs if smoke else 10_000,
        rounds=1 if smoke else 3,
        workdir=workdir,
    )
    if "redis" in engine_names and shutil.which("redis-benchmark"):
        lines += redis_limits(smoke)
    if "postgres" in engine_names and shutil.which("pgbench"):
        lines += pg_limits(smoke, workdir)
    return {"lines": lines}


def redis_limits(smoke: bool) -> list[str]:
    engine = engines.RedisEngine()
    import redis

    client = redis.Redis.from_url(engine.url)
    sha = client.script_load(SCRIPT)
    db = str(client.connection_pool.connection_kwargs.get("db", 0))
    host = client.connection_pool.connection_kwargs.get("host", "127.0.0.1")
    port = str(client.connection_pool.connection_kwargs.get("port", 6379))
    requests = "2000" if smoke else "50000"
    commands = {
        "EVALSHA (TIME+HSET+ZADD script)": ["EVALSHA", sha, "2", "bench:h:__rand_int__", "bench:z"],
        "HMGET": ["HMGET", "bench:h:__rand_int__", "state", "lease"],
        "ZRANGEBYSCORE LIMIT 0 1": ["ZRANGEBYSCORE", "bench:z", "-inf", "+inf", "LIMIT", "0", "1"],
        "PING": ["PING"],
    }
    out = [
        f"`redis-benchmark -n {requests} --dbnum {db}` (requests/s):",
        "",
        "| command | 1 client | 50 clients |",
        "|---|---|---|",
    ]
    for label, command in commands.items():
        figures = []
        for clients in ("1", "50"):
            proc = subprocess.run(
                [
                    "redis-benchmark",
                    "-h",
                    host,
                    "-p",
                    port,
                    "--dbnum",
                    db,
                    "-n",
                    requests,
                    "-c",
                    clients,
                    "-q",
                    "--csv",
                    *command,
                ],
                capture_output=True,
                text=True,
            )
            found = re.findall(r'"([\d.]+)"', proc.stdout.splitlines()[-1]) if proc.stdout else []
            figures.append(f"{float(found[0]):,.0f}" if found else "failed")
        out.append(f"| {label} | {figures[0]} | {figures[1]} |")
    client.flushdb()
    client.close()
    out += [
        "",
        "A worker with one connection that claims one job at a time pays one round trip per "
        "job (complete and reserve pipelined, two scripts), so the 1-client EVALSHA rate "
        "is about the engine's ceiling for it.",
        "",
    ]
    return out


def pg_limits(smoke: bool, workdir: Path) -> list[str]:
    engine = engines.PostgresEngine()
    engine.reset()
    rows = 20_000 if smoke else 200_000
    seconds = "2" if smoke else "5"
    setup = (
        "import sys, tenure\n"
        "app = tenure.App(sys.argv[1]); app.store.migrate()\n"
        "import psycopg\n"
        "with psycopg.connect(sys.argv[1].split('?')[0], autocommit=True) as c:\n"
        '    c.execute("INSERT INTO tenure.tenure_jobs (id, name, queue, payload, state, policy,'
        " created_at, run_at) SELECT 'j' || g, 'noop', 'default', '[]', 'queued', '{}',"
        " date_part('epoch', now()), date_part('epoch', now()) FROM generate_series(1, %s) g\","
        " (int(sys.argv[2]),))\n"
        "app.close()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", setup, engine.url, str(rows)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        return [f"pgbench: could not prepare tenure's schema: {proc.stderr.strip()[-300:]}", ""]
    out = [
        f"`pgbench -n -M prepared -T {seconds} -f bench/pgbench_reserve_complete.sql` on tenure's "
        f"schema with {rows:,} queued jobs (each transaction reserves one job and completes it):",
        "",
        "| clients | jobs/s |",
        "|---|---|",
    ]
    for clients in ("1", "2"):
        proc = subprocess.run(
            [
                "pgbench",
                "-n",
                "-M",
                "prepared",
                "-T",
                seconds,
                "-c",
                clients,
                "-j",
                clients,
                "-f",
                str(BENCH / "pgbench_reserve_complete.sql"),
                engine.url,
            ],
            capture_output=True,
            text=True,
        )
        found = re.search(r"tps = ([\d.]+)", proc.stdout)
        out.append(
            f"| {clients} | {float(found.group(1)):,.0f} |"
            if found
            else f"| {clients} | failed: {proc.stderr.strip()[-200:]} |"
        )
    return [*out, ""]

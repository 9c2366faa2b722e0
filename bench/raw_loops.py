"""The engine's guaranteed loop beside tenure's store loop and tenure's worker, in one run.

    .venv/bin/python -m bench rawloops [--engines sqlite,postgres,redis] [--jobs N] [--rounds R]

Per engine, per round, three loops drain the same number of no-op jobs (order A B C, then
C B A the next round, so drift of a shared machine spreads over all three):

- **raw**: the engine alone doing, per job, what tenure promises: the success recorded on the
  job row and its attempt row, fenced by the attempt number (tenure's token), then the next
  ready job by priority and run time claimed (state, lease, worker) with a new attempt row,
  the success committed with the claim of the next job. SQLite: one BEGIN IMMEDIATE
  transaction of five statements (WAL, synchronous=NORMAL, as tenure), with what tenure's
  readers need of each job besides (stricter than ../shared/limits/sqlite_raw_loop.py: the
  lease index the rescue sweep reads, the retention entry of a finite keep, the paused-queue
  look-up of the claim; marked [+] below). PostgreSQL: one
  statement (data-modifying CTEs). Redis: one Lua script.
- **store**: tenure's own `end_attempt` loop, no worker (bench/rawlimits.py's STORE_LOOP).
- **worker**: `tenure worker --burst --concurrency 1` on the queue; the drain is the rate from
  the first to the last job's end (bench/marks.py, as the main benchmark), and `wall` is
  from the command's start to its exit (its start-up included).

The ratios are taken per round (the loops of one round ran side by side), then the median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import engines, marks
from bench.rawlimits import STORE_LOOP

ROOT = Path(__file__).resolve().parents[1]

# What each statement is for; `?` parameters. The schema and statements are the least that
# carries what tenure promises *and* what its readers need per job (this is stricter than
# ../shared/limits/sqlite_raw_loop.py; each addition is marked [+] and says which reader needs
# it; bench/REPORT.md lists them): token = attempt number, as tenure's; a lease; attempt rows.
SQLITE_RAW = """
import os, sqlite3, sys, time
path, n = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(path, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA synchronous=NORMAL")
c.executescript('''
CREATE TABLE jobs(id TEXT PRIMARY KEY, queue TEXT, state TEXT, priority INT, run_at REAL,
  payload TEXT, lease_until REAL, attempt INT DEFAULT 0, worker TEXT, finished REAL,
  keep REAL);
CREATE INDEX ready ON jobs(queue, priority, run_at) WHERE state = 'queued';
-- [+] the rescue of a dead worker's jobs reads the running ones by lease expiry (tenure's
-- tenure_jobs_lease): without it, every sweep scans the table
CREATE INDEX lease ON jobs(lease_until) WHERE state = 'running';
-- [+] retention: a succeeded job with a finite keep (tenure's default: 7 days) is pruned when
-- finished + keep passes, read as a range (tenure_jobs_prune_succeeded); queue second, so the
-- same entry serves the counts of succeeded jobs per queue (no index of its own for those)
CREATE INDEX prune ON jobs(finished + keep, queue) WHERE state = 'succeeded';
-- [+] a paused queue hands out nothing: the claim looks its queue up here (tenure's
-- tenure_paused_queues; empty, as in tenure's loop)
CREATE TABLE paused(queue TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE attempts(job_id TEXT, n INT, worker TEXT, started REAL, ended REAL, outcome TEXT,
  PRIMARY KEY(job_id, n)) WITHOUT ROWID;
''')
now = time.time()
c.execute("BEGIN")
c.executemany("INSERT INTO jobs(id, queue, state, priority, run_at, payload, keep)"
              " VALUES(?, 'default', 'queued', 0, ?, ?, 604800)",
              ((os.urandom(16).hex(), now, '[%d]' % i) for i in range(n)))
c.execute("COMMIT")
# (1) the head of the ready index (partial: only queued rows), by priority then run time, of a
# queue that is not paused [+]
HEAD = ("SELECT id FROM jobs WHERE queue = 'default' AND state = 'queued' AND run_at <= ?"
        " AND NOT EXISTS (SELECT 1 FROM paused WHERE queue = 'default')"
        " ORDER BY priority, run_at LIMIT 1")
# (2) the claim: state, lease, worker, the next attempt number (the token) and the payload
CLAIM = ("UPDATE jobs SET state = 'running', lease_until = ?, attempt = attempt + 1,"
         " worker = 'w' WHERE id = ? RETURNING attempt, payload")
# (3) the new attempt row: every attempt recorded
OPEN = "INSERT INTO attempts(job_id, n, worker, started) VALUES(?, ?, 'w', ?)"
# (4) the success on the job row, fenced by the token in the same statement
DONE = ("UPDATE jobs SET state = 'succeeded', finished = ?, lease_until = NULL"
        " WHERE id = ? AND attempt = ? AND state = 'running'")
# (5) the success on its attempt row
CLOSE = "UPDATE attempts SET ended = ?, outcome = 'succeeded' WHERE job_id = ? AND n = ?"
def claim(t):
    row = c.execute(HEAD, (t,)).fetchone()
    if row is None:
        return None
    jid = row[0]
    number, payload = c.execute(CLAIM, (t + 30, jid)).fetchone()
    c.execute(OPEN, (jid, number, t))
    return jid, number
start, cpu = time.perf_counter(), time.process_time()
c.execute("BEGIN IMMEDIATE"); held = claim(time.time()); c.execute("COMMIT")
done = 0
while held:
    jid, number = held
    t = time.time()
    c.execute("BEGIN IMMEDIATE")  # the success and the next claim commit together
    if c.execute(DONE, (t, jid, number)).rowcount != 1:
        raise SystemExit("fenced")
    c.execute(CLOSE, (t, jid, number))
    held = claim(t)
    c.execute("COMMIT")
    done += 1
print(done / (time.perf_counter() - start), 1e6 * (time.process_time() - cpu) / done)
"""

# One statement per job: the success (fenced) and its attempt row, the claim of the next job
# (SKIP LOCKED, as several workers need) and its new attempt row, in one round trip.
POSTGRES_RAW = """
import sys, time, psycopg
url, n = sys.argv[1], int(sys.argv[2])
c = psycopg.connect(url, autocommit=True)
c.execute('''
CREATE TABLE raw_jobs(id text PRIMARY KEY, queue text, state text, priority int,
  run_at double precision, payload text, lease_until double precision, attempt int DEFAULT 0,
  worker text, finished double precision);
CREATE INDEX raw_ready ON raw_jobs(queue, priority, run_at) WHERE state = 'queued';
CREATE TABLE raw_attempts(job_id text, n int, worker text, started double precision,
  ended double precision, outcome text, PRIMARY KEY(job_id, n));
''')
c.execute("INSERT INTO raw_jobs(id, queue, state, priority, run_at, payload)"
          " SELECT md5(g::text), 'default', 'queued', 0, extract(epoch from now()),"
          " '[' || g || ']' FROM generate_series(1, %s) g", (n,))
STEP = '''
WITH t AS (SELECT extract(epoch from clock_timestamp()) AS now),
done AS (UPDATE raw_jobs SET state = 'succeeded', finished = (SELECT now FROM t),
    lease_until = NULL WHERE id = %(id)s AND attempt = %(n)s AND state = 'running'
    RETURNING id),
closed AS (UPDATE raw_attempts SET ended = (SELECT now FROM t), outcome = 'succeeded'
    WHERE job_id = (SELECT id FROM done) AND n = %(n)s),
head AS (SELECT id FROM raw_jobs WHERE queue = 'default' AND state = 'queued'
    AND run_at <= (SELECT now FROM t) ORDER BY priority, run_at LIMIT 1 FOR UPDATE SKIP LOCKED),
claimed AS (UPDATE raw_jobs j SET state = 'running', lease_until = (SELECT now FROM t) + 30,
    attempt = j.attempt + 1, worker = 'w' FROM head WHERE j.id = head.id
    AND (%(id)s::text IS NULL OR EXISTS (SELECT 1 FROM done))
    RETURNING j.id, j.attempt, j.payload),
opened AS (INSERT INTO raw_attempts(job_id, n, worker, started)
    SELECT id, attempt, 'w', (SELECT now FROM t) FROM claimed)
SELECT (SELECT count(*) FROM done), claimed.id, claimed.attempt, claimed.payload
FROM (SELECT 1) one LEFT JOIN claimed ON true
'''
start, cpu = time.perf_counter(), time.process_time()
ok, jid, number, payload = c.execute(STEP, {"id": None, "n": 0}, prepare=True).fetchone()
done = 0
while jid is not None:
    ok, nxt, nnum, payload = c.execute(STEP, {"id": jid, "n": number}, prepare=True).fetchone()
    if ok != 1:
        raise SystemExit("fenced")
    jid, number = nxt, nnum
    done += 1
print(done / (time.perf_counter() - start), 1e6 * (time.process_time() - cpu) / done)
c.execute("DROP TABLE raw_jobs, raw_attempts")
"""

# One script per job, one round trip: the success (fenced) on the job hash and its attempt
# hash, then the head of the ready sorted set (score: priority, then run time) claimed.
REDIS_SCRIPT = """
local t = redis.call('TIME'); local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local ok = 0
if ARGV[1] ~= '' then
  local j = 'raw:j:' .. ARGV[1]
  local held = redis.call('HMGET', j, 'attempt', 'state')
  if held[1] ~= ARGV[2] or held[2] ~= 'running' then return {-1} end
  redis.call('HSET', j, 'state', 'succeeded', 'finished', now)
  redis.call('HSET', j .. ':a:' .. ARGV[2], 'ended', now, 'outcome', 'succeeded')
  redis.call('ZREM', KEYS[2], ARGV[1])
  ok = 1
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if #head == 0 then return {ok} end
local id = head[1]
redis.call('ZREM', KEYS[1], id)
local j = 'raw:j:' .. id
local number = redis.call('HINCRBY', j, 'attempt', 1)
redis.call('HSET', j, 'state', 'running', 'lease', now + 30, 'worker', 'w')
redis.call('ZADD', KEYS[2], now + 30, id)
redis.call('HSET', j .. ':a:' .. number, 'worker', 'w', 'started', now)
return {ok, id, number, redis.call('HGET', j, 'payload')}
"""

REDIS_RAW = """
import sys, time, redis
url, n, script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = redis.Redis.from_url(url)
p = r.pipeline(transaction=False)
for i in range(n):
    p.hset('raw:j:%d' % i, mapping={'state': 'queued', 'attempt': 0, 'payload': '[%d]' % i})
    p.zadd('raw:ready', {str(i): i})
p.execute()
step = r.register_script(script)
keys = ['raw:ready', 'raw:leases']
start, cpu = time.perf_counter(), time.process_time()
got = step(keys=keys, args=['', 0])
done = 0
while len(got) > 1:
    got2 = step(keys=keys, args=[got[1], got[2]])
    if got2[0] != 1:
        raise SystemExit('fenced')
    got = got2
    done += 1
print(done / (time.perf_counter() - start), 1e6 * (time.process_time() - cpu) / done)
"""

# tenure's worker on a queue of `n` no-op jobs (bench/systems/tenure_sys.py, as the main
# benchmark), timed by its marks: prints "<drain jobs/s> <CPU us per job> <wall jobs/s incl.
# start>"; the CPU is the worker's whole tree (supervisor and child), its start included.
WORKER_DRAIN = """
import os, resource, subprocess, sys, time
from bench import marks
from bench.systems.tenure_sys import app, noop
n = int(sys.argv[1])
app.store.migrate()
noop.dispatch_many([(i,) for i in range(n)])
app.close()
start = time.perf_counter()
subprocess.run([sys.executable, "-m", "tenure", "worker", "--app", "bench.systems.tenure_sys:app",
                "--burst", "--concurrency", "1"], check=True)
wall = time.perf_counter() - start
times = sorted(m.at for m in marks.read(os.environ[marks.MARKS_ENV]))
if len(times) != n:
    raise SystemExit(f"{len(times)} of {n} jobs ran")
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print((n - 1) / (times[-1] - times[0]), 1e6 * (used.ru_utime + used.ru_stime) / n, n / wall)
"""

LOOPS = ("raw", "store", "worker")
ENGINES = ("sqlite", "postgres", "redis")  # the engines with a raw loop


def _run(code: str, args: list[str], env: dict[str, str] | None = None) -> list[float]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["no output"])[-1][-300:])
    return [float(x) for x in proc.stdout.split()]


def one_loop(engine: engines.Engine, loop: str, jobs: int, workdir: Path) -> list[float]:
    engine.reset()
    url = engine.url_for("tenure")
    if loop == "store":
        return _run(STORE_LOOP, [url, str(jobs), "0"])
    if loop == "worker":
        mark_file = workdir / f"marks-{time.monotonic_ns()}"
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
            "BENCH_URL": url,
            marks.MARKS_ENV: str(mark_file),
        }
        env.pop("TENURE_URL", None)
        return _run(WORKER_DRAIN, [str(jobs)], env)
    if engine.name == "sqlite":
        return _run(SQLITE_RAW, [url.removeprefix("sqlite:///"), str(jobs)])
    if engine.name == "postgres":
        return _run(POSTGRES_RAW, [url, str(jobs)])
    if engine.name == "redis":
        return _run(REDIS_RAW, [url, str(jobs), REDIS_SCRIPT])
    raise ValueError(f"no raw loop for {engine.name}")


def measure(
    engine_names: list[str], *, jobs: int, rounds: int, workdir: Path, echo: bool = False
) -> list[str]:
    """Markdown lines: per engine, the three loops and the per-round ratios to the raw loop."""
    lines = [
        f"The engine's guaranteed loop beside tenure's (`python -m bench rawloops`, {jobs:,} "
        f"no-op jobs, {rounds} interleaved round(s); jobs/s, median (min{DASH}max); ratios "
        "taken per round, then the median; see bench/raw_loops.py for what each loop does):",
        "",
        "| engine | raw loop | store loop | worker drain | worker wall (incl. start) "
        "| store ÷ raw | worker ÷ raw |",
        "|---|---|---|---|---|---|---|",
    ]
    cpu: dict[str, list[list[float]]] = {}
    for name in engine_names:
        engine = engines.make(name, workdir)
        problem = engine.problem()
        if problem:
            lines.append(f"| {name} | skipped: {problem} | | | | | |")
            continue
        got: dict[str, list[list[float]]] = {loop: [] for loop in LOOPS}
        try:
            for r in range(rounds):
                for loop in LOOPS if r % 2 == 0 else tuple(reversed(LOOPS)):
                    figures = one_loop(engine, loop, jobs, workdir)
                    got[loop].append(figures)
                    if echo:
                        shown = " ".join(f"{f:,.0f}" for f in figures)
                        print(f"bench: {name} round {r + 1} {loop:6} {shown}", file=sys.stderr)
        except RuntimeError as exc:
            lines.append(f"| {name} | failed: {exc} | | | | | |")
            continue
        finally:
            engine.close()
        raw, store, drain = ([f[0] for f in got[loop]] for loop in LOOPS)
        wall = [f[2] for f in got["worker"]]
        lines.append(
            f"| {name} | {_cell(raw)} | {_cell(store)} | {_cell(drain)} | {_cell(wall)} "
            f"| {_ratio(store, raw)} | {_ratio(drain, raw)} |"
        )
        cpu[name] = [[f[1] for f in got[loop]] for loop in LOOPS]
    lines += [
        "",
        "CPU per job (µs; the worker's is its whole tree, supervisor and child, start-up "
        "included; the client's own CPU for the PostgreSQL and Redis loops, not the server's): "
        "the same work, less sensitive to what else runs on the machine than jobs/s:",
        "",
        "| engine | raw loop | store loop | worker | raw ÷ store | raw ÷ worker |",
        "|---|---|---|---|---|---|",
    ]
    for name, (raw, store, worker) in cpu.items():
        lines.append(
            f"| {name} | {_cell(raw)} | {_cell(store)} | {_cell(worker)} "
            f"| {_ratio(raw, store)} | {_ratio(raw, worker)} |"
        )
    return [*lines, ""]


DASH = "\u2013"


def _cell(values: list[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:,.0f}"
    return f"{med:,.0f} ({min(values):,.0f}{DASH}{max(values):,.0f})"


def _ratio(mine: list[float], raw: list[float]) -> str:
    per_round = [m / r for m, r in zip(mine, raw, strict=True)]
    med = statistics.median(per_round)
    if len(per_round) == 1:
        return f"{med:.2f}"
    return f"{med:.2f} ({min(per_round):.2f}{DASH}{max(per_round):.2f})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench rawloops", description=__doc__)
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--jobs", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="tenure-rawloops-"))
    names = [n for n in args.engines.split(",") if n]
    print("\n".join(measure(names, jobs=args.jobs, rounds=args.rounds, workdir=workdir, echo=True)))
    return 0

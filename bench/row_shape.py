"""What SQLite's per-job work costs in tenure's schema, one suspect at a time (issue 35).

    .venv/bin/python -m bench rowshape [--jobs N] [--callgrind] [--only V,V]

tenure's five hot statements (the success, its attempt closed, the ready head, the claim, the
new attempt row: stores/sqlite/hot_sql.py) run on plain sqlite3 in the raw loop's
shape (bench/raw_loops.py), on a store that tenure made and filled, so tenure's Python is out
of the count and only the engine's work is left. Each variant changes one thing:

- **tenure**: the statements the store ran before this pass (COMPLETE, which jobs.py still
  runs for a job with a batch, chain or concurrency key, and OPEN, each with a RETURNING).
- **hot**: the busy worker's statements now: the plain success counted by its row count
  (COMPLETE_PLAIN), the claim's columns and next attempt number read with the head (READY)
  and the claim without RETURNING (CLAIM).
- **narrow row**: the job row holds only the columns the claim, the success and the guards
  read (19 of 31); name, payload, policy and the rest in a side table, read by id at the claim.
  The lead of the previous pass: each UPDATE decodes and rewrites a ~30-column record.
- **success without RETURNING**: the fenced success checked by its row count. SQLite runs a
  RETURNING as a trigger program whose rows it buffers in an ephemeral table before the first
  row comes back: a sub-VM frame and a temporary B-tree per statement, one VM step for it all.
- **no RETURNING at all**: the claim's too (its row read back by a SELECT on the id).
- **without tenure_jobs_ready**: a queued job sits in two ready indexes; each claim deletes
  an entry from both.
- **raw loop's indexes**: only the ready-by-priority, lease and succeeded indexes (the upper
  bound of what dropping indexes could give; tenure's readers need the others).
- **the hot path on the raw loop's indexes**: the same, under the hot path's statements (what
  the guard indexes, which a plain job is never in, still cost it; since migration 0017 the
  second ready index and the prune index of failed jobs are gone already).

VM steps come from a progress handler called at every step; instructions (`--callgrind`) are
the slope between N/5 and N jobs, counted from the drain's first statement on.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.per_job import COUNT_FROM_HERE, _callgrind, _counted, _env

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = {
    "tenure": "tenure's statements and schema (before)",
    "hot": "tenure's hot path now (no RETURNING, jobs.py)",
    "narrow": "narrow row (19 columns; the rest read by id at the claim)",
    "success-plain": "success without RETURNING",
    "no-returning": "no RETURNING at all",
    "one-ready": "without tenure_jobs_ready",
    "raw-indexes": "raw loop's indexes only",
    "hot-raw-indexes": "the hot path on the raw loop's indexes only",
    "hot-no-guards": "the hot path without the five guard indexes",
    "hot-guard-state": "the hot path, the guard indexes on a guard_state column it never sets",
    "hot-guard-trigger": "the same, guard_state kept by a trigger on UPDATE OF state",
    "hot-guard-check": "the same, every writer held to guard_state by a CHECK",
}

LOOP = """
import sqlite3, sys, time
import tenure
from tenure.stores.sqlite import guards as G, hot_sql as J, ready as R
path, n, variant = sys.argv[1], int(sys.argv[2]), sys.argv[3]
app = tenure.App("sqlite:///" + path)
@app.job
def noop(i): pass
noop.dispatch_many([(i,) for i in range(n)])
app.close()
c = sqlite3.connect(path, isolation_level=None)
c.execute("PRAGMA synchronous=NORMAL")
# the ready head, the claim and the success as the store ran them before this pass (de25d4d^)
READY = ("SELECT id, overlap_key, overlap_delay, rate_key, rate_limit, rate_window,"
         " concurrency_key, concurrency_limit FROM tenure_jobs"
         " INDEXED BY tenure_jobs_ready_by_priority"
         " WHERE queue = ? AND state = 'queued' AND run_at <= ?" + R.NOT_PAUSED
         + " ORDER BY priority, run_at, rowid LIMIT ?")
OPEN = (f"UPDATE tenure_jobs SET state = 'running', attempt = {G.NEXT_ATTEMPT},"
        " lease_expires_at = ?, worker_id = ? WHERE id = ?"
        " RETURNING id, name, queue, payload, policy, attempt, lease_expires_at, batch_id")
ATTEMPT, COMPLETE, CLOSE = J.ATTEMPT_ROW, J.COMPLETE, J.CLOSE_SUCCEEDED
READ_BACK = None  # a SELECT by id after the claim, where the claim has no RETURNING
if variant == "narrow":
    HOT = ("id, queue, state, priority, run_at, finished_at, attempt, tries_used,"
           " lease_expires_at, worker_id, batch_id, overlap_key, rate_key, keep_succeeded,"
           " keep_failed, chain, concurrency_key, concurrency_limit, debounce_key")
    indexes = [r[0] for r in c.execute("SELECT sql FROM sqlite_master WHERE type = 'index'"
                                       " AND tbl_name = 'tenure_jobs' AND sql IS NOT NULL")]
    c.executescript(f'''
      CREATE TABLE cold AS SELECT * FROM tenure_jobs;
      CREATE UNIQUE INDEX cold_id ON cold(id);
      ALTER TABLE tenure_jobs RENAME TO wide;
      CREATE TABLE tenure_jobs (id TEXT PRIMARY KEY, queue TEXT NOT NULL, state TEXT NOT NULL,
        priority INTEGER NOT NULL DEFAULT 0, run_at REAL NOT NULL, finished_at REAL,
        attempt INTEGER NOT NULL DEFAULT 0, tries_used INTEGER NOT NULL DEFAULT 0,
        lease_expires_at REAL, worker_id TEXT, batch_id TEXT, overlap_key TEXT, rate_key TEXT,
        keep_succeeded REAL, keep_failed REAL, chain TEXT, concurrency_key TEXT,
        concurrency_limit INTEGER, debounce_key TEXT);
      INSERT INTO tenure_jobs SELECT {HOT} FROM wide ORDER BY rowid;
      DROP TABLE wide;
    ''')
    for sql in indexes:
        c.execute(sql)
    READY = READY.replace("overlap_delay, rate_key, rate_limit, rate_window",
                          "NULL, rate_key, NULL, NULL")
    OPEN = OPEN.split(" RETURNING")[0] + " RETURNING id, NULL, queue, NULL, NULL, attempt,"
    OPEN += " lease_expires_at, batch_id"
    READ_BACK = "SELECT name, payload, policy FROM cold WHERE id = ?"
if variant in ("success-plain", "no-returning"):
    COMPLETE = COMPLETE.split(" RETURNING")[0]
if variant == "no-returning":
    OPEN = OPEN.split(" RETURNING")[0]
    READ_BACK = ("SELECT id, name, queue, payload, policy, attempt, lease_expires_at, batch_id"
                 " FROM tenure_jobs WHERE id = ?")
if variant.startswith("hot"):
    READY, OPEN, COMPLETE = R.READY, J.CLAIM, J.COMPLETE_PLAIN
if variant == "one-ready":
    c.execute("DROP INDEX IF EXISTS tenure_jobs_ready")  # gone since migration 0017
if variant.endswith("raw-indexes"):
    for name in ("overlap", "prune_failed", "ready", "batch", "debounce", "state", "slots",
                 "parked"):
        c.execute(f"DROP INDEX IF EXISTS tenure_jobs_{name}")
# The five guard indexes as they are, with `state` read from a column only a guarded job's
# statements would set (NULL for a plain job): SQLite leaves an index out of an UPDATE whose
# SET names none of its columns, nor any its WHERE reads.
GUARD_STATE = '''
ALTER TABLE tenure_jobs ADD COLUMN guard_state TEXT;
DROP INDEX tenure_jobs_overlap; DROP INDEX tenure_jobs_batch; DROP INDEX tenure_jobs_debounce;
DROP INDEX tenure_jobs_slots; DROP INDEX tenure_jobs_parked;
CREATE INDEX tenure_jobs_overlap ON tenure_jobs (overlap_key, guard_state)
    WHERE overlap_key IS NOT NULL;
CREATE INDEX tenure_jobs_batch ON tenure_jobs (batch_id, guard_state) WHERE batch_id IS NOT NULL;
CREATE INDEX tenure_jobs_debounce ON tenure_jobs (debounce_key)
    WHERE debounce_key IS NOT NULL AND guard_state = 'queued';
CREATE INDEX tenure_jobs_slots ON tenure_jobs (concurrency_key, guard_state)
    WHERE concurrency_key IS NOT NULL AND guard_state = 'running';
CREATE INDEX tenure_jobs_parked ON tenure_jobs (concurrency_key, run_at)
    WHERE concurrency_key IS NOT NULL AND guard_state = 'queued' AND run_at >= 253402214400.0;
'''
# A guarded job's guard_state is its state, a plain job's NULL: a statement that moved a
# guarded job's state and not its guard_state fails (SQLite checks a CHECK only on an UPDATE
# that sets a column it reads: `state`, on the hot path). The rows already there are not
# checked as the column is added (they are set right after).
GUARD_CHECK = '''
PRAGMA ignore_check_constraints = ON;
ALTER TABLE tenure_jobs ADD COLUMN guard_state TEXT CHECK (guard_state IS state
    OR guard_state IS NULL AND overlap_key IS NULL AND concurrency_key IS NULL
    AND debounce_key IS NULL);
PRAGMA ignore_check_constraints = OFF;
'''
if variant == "hot-no-guards":
    for name in ("overlap", "batch", "debounce", "slots", "parked"):
        c.execute(f"DROP INDEX IF EXISTS tenure_jobs_{name}")
if variant.startswith("hot-guard-") and any(
    r[1] == "guard_state" for r in c.execute("PRAGMA table_info(tenure_jobs)")
):
    raise SystemExit(f"{variant}: a store before migration 0018 (measured at 10cda0e)")
if variant == "hot-guard-check":  # the column with its CHECK (tested on every state UPDATE)
    c.executescript(GUARD_CHECK)
if variant.startswith("hot-guard-"):
    c.executescript(GUARD_STATE if variant != "hot-guard-check" else GUARD_STATE.split(";", 1)[1])
if variant == "hot-guard-trigger":
    c.execute("CREATE TRIGGER tenure_jobs_guard_state AFTER UPDATE OF state ON tenure_jobs"
              " WHEN NEW.guard_state IS NOT NULL BEGIN UPDATE tenure_jobs"
              " SET guard_state = NEW.state WHERE rowid = NEW.rowid; END")
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
def claim(t):
    row = c.execute(READY, ("default", t, "default", 1)).fetchone()
    if row is None:
        return None
    if variant.startswith("hot"):
        c.execute(OPEN, (row[13], t + 30, "w", row[0]))
        c.execute(ATTEMPT, (row[0], row[13], "w", "h", 1, t, t))
        return row[0], row[13]
    got = c.execute(OPEN, (t + 30, "w", row[0])).fetchone()
    if READ_BACK is not None:
        back = c.execute(READ_BACK, (row[0],)).fetchone()
        got = got or back
    number = got[5]
    c.execute(ATTEMPT, (row[0], number, "w", "h", 1, t, t))
    return row[0], number
def fenced(jid, number, t):
    cur = c.execute(COMPLETE, (t, jid, number))
    return cur.rowcount != 1 if "RETURNING" not in COMPLETE else cur.fetchone() is None
start, cpu = time.perf_counter(), time.process_time()
c.execute("BEGIN IMMEDIATE"); held = claim(time.time()); c.execute("COMMIT")
done = 0
while held:
    jid, number = held
    t = time.time()
    c.execute("BEGIN IMMEDIATE")
    if fenced(jid, number, t):
        raise SystemExit("fenced")
    c.execute(CLOSE, (t, jid, number))
    held = claim(t)
    c.execute("COMMIT")
    done += 1
if done != n:
    raise SystemExit(f"{done} of {n} jobs")
"""

# Steps counted from the drain on: a progress handler called at every VM step.
STEPS = """
_steps = [0]
def _step():
    _steps[0] += 1
    return 0
c.set_progress_handler(_step, 1)
import atexit as _atexit
_atexit.register(lambda: print("STEPS", _steps[0]))
"""
DRAIN = "start, cpu ="


def _command(variant: str, jobs: int, before_drain: str, workdir: Path) -> list[str]:
    if DRAIN not in LOOP:
        raise RuntimeError(f"the loop no longer has {DRAIN!r}")
    code = LOOP.replace(DRAIN, before_drain + DRAIN, 1)
    db = tempfile.mkdtemp(dir=workdir) + "/db.sqlite"
    return [sys.executable, "-c", code, db, str(jobs), variant]


def vm_steps(variant: str, jobs: int, workdir: Path) -> float:
    out = subprocess.run(
        _command(variant, jobs, STEPS, workdir),
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    found = re.search(r"^STEPS (\d+)$", out.stdout, re.M)
    if out.returncode != 0 or found is None:
        raise RuntimeError(f"{variant}: {out.stderr.strip()[-300:]}")
    return int(found.group(1)) / jobs


def instructions(variant: str, jobs: int, workdir: Path) -> float:
    small = max(jobs // 5, 1)
    got = []
    for n in (small, jobs):
        prefix = workdir / f"cg-{variant}-{n}"
        _callgrind(
            _command(variant, n, COUNT_FROM_HERE, workdir), prefix, at_start=False, env=_env()
        )
        got.append(sum(_counted(prefix).values()))
    return (got[1] - got[0]) / (jobs - small)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench rowshape", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--callgrind", action="store_true", help="instructions too (valgrind)")
    parser.add_argument("--only", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="tenure-rowshape-"))
    chosen = [v for v in args.only.split(",") if v]
    lines = [
        f"tenure's hot statements on plain sqlite3, one change at a time ({args.jobs:,} jobs; "
        "`python -m bench rowshape" + (" --callgrind" if args.callgrind else "") + "`):",
        "",
        "| variant | VM steps a job | instructions a job | vs tenure |",
        "|---|---|---|---|",
    ]
    base: float | None = None
    for variant in chosen:
        steps = vm_steps(variant, args.jobs, workdir)
        if not args.callgrind:
            lines.append(f"| {VARIANTS[variant]} | {steps:,.0f} | | |")
            continue
        count = instructions(variant, args.jobs, workdir)
        base = count if base is None else base
        lines.append(
            f"| {VARIANTS[variant]} | {steps:,.0f} | {count:,.0f} | {count / base - 1:+.1%} |"
        )
    print("\n".join([*lines, ""]))
    return 0

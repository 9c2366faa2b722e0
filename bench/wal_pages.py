"""WAL frames per job, by B-tree: the raw guaranteed loop beside tenure's store loop (issue 35).

    .venv/bin/python -m bench walpages [--jobs N]

Every page a commit changes is one 4 KB frame appended to the WAL, later copied into the
database by a checkpoint (with an fsync of each file): the engine's work per job that no
timing on a shared machine measures as exactly. Both loops run with checkpoints off
(`wal_autocheckpoint=0`) after a checkpoint that empties the WAL; then every frame's page is
named by `dbstat` (the table or index it belongs to), and the frames are divided by the jobs.
An exact count, the same on a loaded machine as on a quiet one.
"""

from __future__ import annotations

import argparse
import collections
import json
import sqlite3
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.raw_loops import ROOT, SQLITE_RAW

WAL_HEADER, FRAME_HEADER = 32, 24

# The raw loop as bench/raw_loops.py runs it, the WAL emptied and kept before the loop, and
# the frames counted before its connection closes (a last close checkpoints the WAL away).
# Both loops drain half of what was enqueued: a drained index frees its pages, and a page on
# the freelist can no longer be named.
RAW = (
    SQLITE_RAW.replace("while held:", "while held and done < n // 2:")
    .replace(
        "start, cpu = time.perf_counter(), time.process_time()",
        "c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "start, cpu = time.perf_counter(), time.process_time()",
    )
    .replace(
        "print(done / (time.perf_counter() - start)",
        "from bench.wal_pages import report; report(path, done)\n"
        "print(done / (time.perf_counter() - start)",
    )
)
if RAW.count("bench.wal_pages") != 1 or RAW.count("done < n // 2") != 1:
    raise RuntimeError("bench/raw_loops.py's SQLITE_RAW changed: update bench/wal_pages.py")

# tenure's store loop (bench/rawlimits.py's STORE_LOOP, limit 0): end_attempt records each
# success and claims the next job in one transaction, as the worker's child does.
STORE = """
import sys
import tenure
from tenure.core.records import Ending, WorkerRef
from bench.wal_pages import report
path, n = sys.argv[1], int(sys.argv[2])
app = tenure.App("sqlite:///" + path)
@app.job
def noop(n): pass
noop.dispatch_many([(i,) for i in range(2 * n)])
store, me = app.store, WorkerRef(id="w-bench", host="bench", pid=1)
held = store.reserve(queues=["default"], worker=me, lease=30, limit=1)[0]
conn = store.db.conn()
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"); conn.execute("PRAGMA wal_autocheckpoint=0")
done = 0
while done < n:
    _, held = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=me, lease=30
    )
    done += 1
report(path, done)
"""


def frames_by_btree(path: str) -> collections.Counter[str]:
    """The WAL's frames, by the table or index their page belongs to (read while the writer's
    connection is still open, so the WAL is still there)."""
    data = Path(path + "-wal").read_bytes()
    (page_size,) = struct.unpack(">I", data[8:12])
    with sqlite3.connect(path) as conn:  # reads through the WAL: the pages as last written
        names = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    got: collections.Counter[str] = collections.Counter()
    for at in range(WAL_HEADER, len(data) - FRAME_HEADER + 1, FRAME_HEADER + page_size):
        (page,) = struct.unpack(">I", data[at : at + 4])
        got[names.get(page, "(freelist)")] += 1
    return got


def report(path: str, jobs: int) -> None:
    """Print, as one JSON line, each B-tree's frames per job."""
    per_job = {name: n / jobs for name, n in frames_by_btree(path).items()}
    print("WALPAGES " + json.dumps(per_job))


def measure(jobs: int, workdir: Path) -> list[str]:
    got: dict[str, dict[str, float]] = {}
    for loop, code in (("raw loop", RAW), ("tenure store loop", STORE)):
        path = str(workdir / f"{loop.split()[0]}.db")
        out = subprocess.run(
            [sys.executable, "-c", code, path, str(2 * jobs if code is RAW else jobs)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        line = next(x for x in out.splitlines() if x.startswith("WALPAGES "))
        got[loop] = json.loads(line.removeprefix("WALPAGES "))
    names = sorted(
        {n for per in got.values() for n in per},
        key=lambda n: -sum(per.get(n, 0.0) for per in got.values()),
    )
    lines = [
        f"WAL frames (4 KB pages) written per job, by B-tree (`python -m bench walpages`, "
        f"{jobs:,} no-op jobs, checkpoints off; an exact count, not a timing):",
        "",
        "| B-tree | " + " | ".join(got) + " |",
        "|---|" + "---|" * len(got),
    ]
    for name in names:
        cells = " | ".join(f"{per.get(name, 0.0):.2f}" for per in got.values())
        lines.append(f"| {name} | {cells} |")
    totals = " | ".join(f"**{sum(per.values()):.2f}**" for per in got.values())
    lines.append(f"| **total** | {totals} |")
    return [*lines, ""]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench walpages", description=__doc__)
    parser.add_argument("--jobs", type=int, default=3_000)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="tenure-walpages-"))
    print("\n".join(measure(args.jobs, workdir)))
    return 0

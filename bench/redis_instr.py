"""The Redis server's instructions per job under callgrind (issue 32), a count a loaded machine
does not change, where `redis-work`'s server CPU µs does:

    .venv/bin/python -m bench redis-instr [--jobs N] [--rounds R] [--keep]

Starts a private redis-server under `valgrind --tool=callgrind` (--hz 1, so its timer adds
little), then in this process: N no-op jobs dispatched one by one, then drained as a busy worker
drains them (each success claims the next job in the same call: end_attempt with queues). A
callgrind dump after each half gives the server's instructions for it, and INFO commandstats
its commands (a script's redis.call()s included); printed per job. Needs
valgrind; slow (the server runs some 50 times slower), so N defaults to 1,000: the
queued zset starts empty and is a listpack for its first 128 jobs, which larger N amortise.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.redis_work import free_port, wait_until_answering

WARM_JOBS = 200
SUMMARY = re.compile(r"^(?:summary|totals):\s*(\d+)", re.M)


def _dump(pid: int, workdir: Path) -> int:
    """Dump the counters since the last dump (callgrind_control -d zeroes them) and return the
    dump's instruction total."""
    before = set(workdir.glob("cg.out.*"))
    subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True, check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = sorted(set(workdir.glob("cg.out.*")) - before)
        for path in new:
            found = SUMMARY.search(path.read_text(errors="replace"))
            if found:
                return int(found.group(1))
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def _commands(client: Any) -> int:
    """Commands the server ran since the last CONFIG RESETSTAT, the scripts' own included
    (commandstats counts a redis.call too), the bench's INFO and CONFIG left out."""
    stats = client.info("commandstats")
    skip = ("cmdstat_info", "cmdstat_config|resetstat", "cmdstat_config")
    return sum(int(v["calls"]) for k, v in stats.items() if k not in skip)


def measure(jobs: int, workdir: Path) -> tuple[float, float, float, float]:
    import redis

    import tenure
    from tenure.core.records import Ending, WorkerRef

    port = free_port()
    server = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={workdir}/cg.out",
            *("redis-server", "--port", str(port), "--save", "", "--appendonly", "no"),
            *("--hz", "1", "--dir", str(workdir)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        wait_until_answering(client, timeout_s=60, poll_s=0.2)
        app = tenure.App(url)

        @app.job
        def noop(n: int) -> None:
            pass

        store, me = app.store, WorkerRef(id="w-instr", host="bench", pid=1)

        def drain() -> int:
            done = 0
            got = store.reserve(queues=["default"], worker=me, lease=30, limit=1)
            held = got[0] if got else None
            while held is not None:
                ending = Ending(job_id=held.job_id, token=held.token)
                _, held = store.end_attempt(ending, queues=["default"], worker=me, lease=30)
                done += 1
            return done

        # warm-up: libraries loaded, queue registered, and the indexes a store keeps (every job,
        # finished ones, retention) past zset-max-listpack-entries, as in any store in use: a
        # listpack's insert scans it, which would make the count depend on N
        for n in range(WARM_JOBS):
            noop.dispatch(-n)
        drain()
        _dump(server.pid, workdir)
        client.config_resetstat()
        for n in range(jobs):
            noop.dispatch(n)
        enqueue = _dump(server.pid, workdir)
        enqueue_commands = _commands(client)
        client.config_resetstat()
        done = drain()
        drained = _dump(server.pid, workdir)
        drain_commands = _commands(client)
        if done != jobs:
            raise RuntimeError(f"drained {done} of {jobs}")
        app.close()
        return enqueue / jobs, drained / jobs, enqueue_commands / jobs, drain_commands / jobs
    finally:
        server.terminate()
        server.wait()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench redis-instr", description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the dumps (callgrind_annotate)")
    args = parser.parse_args(argv)
    # the checkout's own tenure before any installed one (as redis-work's child runs it)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    if "tenure" in sys.modules:
        raise SystemExit("redis_instr: tenure was imported before its path was set")
    if shutil.which("valgrind") is None:
        raise SystemExit("redis_instr: needs valgrind")
    for _ in range(args.rounds):
        workdir = Path(tempfile.mkdtemp(prefix="tenure-redis-instr-"))
        enqueue, drain, enqueue_commands, drain_commands = measure(args.jobs, workdir)
        if args.keep:
            print(f"dumps in {workdir} (.1: warm-up, .2: enqueue, .3: drain)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        print(
            f"server instructions per job ({args.jobs} jobs): enqueue {enqueue / 1000:.1f}k, "
            f"drain {drain / 1000:.1f}k, total {(enqueue + drain) / 1000:.1f}k; commands per "
            f"job (the call and its redis.call()s): enqueue {enqueue_commands:.2f}, "
            f"drain {drain_commands:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

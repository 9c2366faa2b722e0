"""What a chain costs over plain jobs: the same number of jobs run through a worker's own
verbs (reserve, then complete_and_reserve with a result) as plain jobs and as chain links,
whose every success also queues the next link in the same transaction (script).

    .venv/bin/python -m bench.chains [--jobs 2000] [--links 5] [--rounds 4]
                                     [--engines sqlite,postgres,redis]

Per engine and kind: the dispatch (plain jobs in one enqueue_many, chains one app.chain each),
then the drain in one thread, one job at a time (the hot path of one worker slot); ms per job
and the chain's overhead over plain jobs, the two kinds taking turns in rounds. Every link
ran, once, and succeeded: checked after each round.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import tenure
from tenure.core.records import Ending, WorkerRef
from tenure.stores.base import get_job

from bench.wait_latency import drop, urls

WORKER = WorkerRef(id="bench-chains", host="bench", pid=0)


def drain(app: tenure.App) -> int:
    store, ran = app.store, 0
    got = store.reserve(queues=["default"], worker=WORKER, lease=60, limit=1)
    held = got[0] if got else None
    while held is not None:
        ran += 1
        _, held = store.end_attempt(
            Ending(job_id=held.job_id, token=held.token, result=str(ran)),
            queues=["default"],
            worker=WORKER,
            lease=60,
        )
        if held is None:
            more = store.reserve(queues=["default"], worker=WORKER, lease=60, limit=1)
            held = more[0] if more else None
    return ran


def measure(url: str, jobs: int, links: int, rounds: int) -> dict[str, float]:
    """Plain jobs and chains take turns in `rounds`, so that neither runs only on the
    emptier store, nor only while the machine was quieter."""
    app = tenure.App(url)

    @app.job(name="step")
    def step(n: int) -> int:
        return n

    app.migrate()
    spent = dict.fromkeys(("plain_dispatch", "plain", "chain_dispatch", "chain"), 0.0)
    per_round = max(links, jobs // rounds // links * links)
    done = {"plain": 0, "chain": 0}
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            step.dispatch_many([(i,) for i in range(per_round)])
            spent["plain_dispatch"] += time.perf_counter() - started
            started = time.perf_counter()
            done["plain"] += drain(app)
            spent["plain"] += time.perf_counter() - started
            started = time.perf_counter()
            handles = [
                app.chain([step.sig(c * links + i) for i in range(links)])
                for c in range(per_round // links)
            ]
            spent["chain_dispatch"] += time.perf_counter() - started
            started = time.perf_counter()
            ran = drain(app)
            spent["chain"] += time.perf_counter() - started
            done["chain"] += ran
            assert ran == len(handles) * links, f"{ran} links ran, expected {len(handles) * links}"
            for h in handles:
                states = [getattr(get_job(app.store, link.id), "state", None) for link in h.links]
                assert states == ["succeeded"] * links, states
        return {
            "plain_dispatch_ms": spent["plain_dispatch"] * 1000 / done["plain"],
            "plain_ms": spent["plain"] * 1000 / done["plain"],
            "chain_dispatch_ms": spent["chain_dispatch"] * 1000 / done["chain"],
            "chain_ms": spent["chain"] * 1000 / done["chain"],
        }
    finally:
        app.close()
        drop(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--links", type=int, default=5)
    parser.add_argument("--engines", default="sqlite,postgres,redis")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tenure-chains-") as tmp:
        where = urls(Path(tmp))
        for engine in args.engines.split(","):
            m = measure(where[engine], args.jobs, args.links, args.rounds)
            print(
                f"{engine:9} plain {m['plain_ms']:.3f} ms/job, chain link {m['chain_ms']:.3f}"
                f" ms/job ({(m['chain_ms'] / m['plain_ms'] - 1) * 100:+.0f}%); dispatch"
                f" {m['plain_dispatch_ms']:.3f} ms/job in one enqueue_many,"
                f" {m['chain_dispatch_ms']:.3f} ms/link as chains of {args.links}"
                f" ({args.jobs} jobs each way)"
            )


if __name__ == "__main__":
    main()

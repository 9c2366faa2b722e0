"""Many reservers at once, in threads and in separate processes: no job is handed out twice."""

from __future__ import annotations

import collections
import json
import threading

from conformance.helpers import counts, new_job, race
from tenure.core.records import Ending, WorkerRef
from tenure.stores import Store, open_store
from tenure.stores.base import get_job

RESERVER = r"""
import json, os, random, sys, time
from tenure.stores import open_store
from tenure.stores.base import WorkerRef

store = open_store(sys.argv[1])
store.now()  # connected before the start line, so all processes begin together
print("ready", flush=True)
sys.stdin.readline()
me = WorkerRef(id=f"racer-{os.getpid()}", host="race-host", pid=os.getpid())
got, empty = [], 0
while empty < 3:  # a few empty rounds: the others may still be committing
    batch = store.reserve(queues=["race"], worker=me, lease=60, limit=random.randint(1, 2))
    empty = 0 if batch else empty + 1
    got.extend([r.job_id, r.token] for r in batch)
    time.sleep(0.001)  # yield: on a busy machine one process could drain all before the rest run
store.close()
print(json.dumps(got), flush=True)
"""


def test_processes_racing_to_reserve_never_share_a_job(store: Store, store_url: str) -> None:
    jobs = [new_job(queue="race") for _ in range(600)]
    store.enqueue_many(jobs)
    outputs, codes = race(RESERVER, store_url, timeout=60)
    results = [json.loads(out) for out in outputs]
    assert all(code == 0 for code in codes)
    handed = [job_id for result in results for job_id, _ in result]
    twice = [j for j, n in collections.Counter(handed).items() if n > 1]
    assert twice == [], f"handed out more than once: {twice}"
    assert sorted(handed) == sorted(j.id for j in jobs)
    assert all(token == 1 for result in results for _, token in result)
    assert counts(store)["running"] == len(jobs)
    # every process got some: they really raced, not ran one after the other
    assert sum(1 for r in results if r) >= 2, [len(r) for r in results]


def test_threads_sharing_one_store_never_share_a_job(store: Store) -> None:
    jobs = [new_job(queue="race") for _ in range(200)]
    store.enqueue_many(jobs)
    handed: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def reserver(n: int) -> None:
        me = WorkerRef(id=f"thread-{n}", host="race-host", pid=n)
        try:
            start.wait()
            while batch := store.reserve(queues=["race"], worker=me, lease=60, limit=3):
                with lock:
                    handed.extend(r.job_id for r in batch)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reserver, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(handed) == len(set(handed)) == len(jobs)


def test_completing_and_reserving_concurrently_keeps_every_job_once(
    store: Store, store_url: str
) -> None:
    # Workers that reserve, complete and reserve again, while a rescuer runs: each job ends
    # succeeded with exactly one attempt (nobody's lease expires here).
    jobs = [new_job(queue="race") for _ in range(120)]
    store.enqueue_many(jobs)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        own = open_store(store_url)
        me = WorkerRef(id=f"w{n}", host="h", pid=n)
        try:
            while batch := own.reserve(queues=["race"], worker=me, lease=60, limit=2):
                for r in batch:
                    assert own.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
                own.sweep(prune=False)
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert counts(store)["succeeded"] == len(jobs)
    for j in jobs[::17]:
        record = get_job(store, j.id)
        assert record is not None and [a.outcome for a in record.attempts] == ["succeeded"]

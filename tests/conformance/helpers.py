"""Small helpers the conformance tests share: jobs, workers, and waiting on conditions."""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from tenure.core.records import (
    AttemptRecord,
    BatchRecord,
    JobRecord,
    NewJob,
    Reservation,
    WorkerRef,
)
from tenure.core.retry import Policy
from tenure.stores import Store, open_store
from tenure.stores.base import get_batch, get_job, total_counts

T = TypeVar("T")

W1 = WorkerRef(id="worker-one", host="host-a", pid=4242)
W2 = WorkerRef(id="worker-two", host="host-b", pid=5151)

# Retries at once, so a test can follow a job through several attempts without waiting.
QUICK = Policy(tries=3, backoff=0)


def new_job(
    *,
    queue: str = "default",
    policy: Policy = QUICK,
    delay: float = 0.0,
    name: str = "send_invoice",
    payload: str = '{"args":[42],"kwargs":{}}',
    batch_id: str | None = None,
) -> NewJob:
    return NewJob(
        id=secrets.token_hex(8),
        name=name,
        queue=queue,
        payload=payload,
        policy=policy,
        delay=delay,
        batch_id=batch_id,
    )


def counts(store: Store) -> dict[str, int]:
    """Jobs per state, every state present: what App.counts() shows, from `queue_counts()`."""
    return total_counts(store.queue_counts())


def enqueue(store: Store, *jobs: NewJob) -> list[str]:
    store.enqueue_many(list(jobs))
    return [j.id for j in jobs]


def reserve_one(
    store: Store,
    *,
    queues: Sequence[str] = ("default",),
    worker: WorkerRef = W1,
    lease: float = 30.0,
) -> Reservation:
    got = store.reserve(queues=queues, worker=worker, lease=lease, limit=1)
    assert len(got) == 1, f"expected one job ready in {list(queues)}, got {got}"
    return got[0]


def job(store: Store, job_id: str) -> JobRecord:
    record = get_job(store, job_id)
    assert record is not None, f"job {job_id} vanished"
    return record


def batch(store: Store, batch_id: str) -> BatchRecord:
    record = get_batch(store, batch_id)
    assert record is not None, f"batch {batch_id} vanished"
    return record


def attempt(store: Store, job_id: str, number: int) -> AttemptRecord:
    found = [a for a in job(store, job_id).attempts if a.number == number]
    assert found, f"job {job_id} has no attempt {number}"
    return found[0]


def wait_until(
    check: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.02, what: str = ""
) -> T:
    """Poll until `check()` returns something truthy; fail with `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or check}")
        time.sleep(interval)


def expire_and_rescue(store: Store, job_id: str, *, timeout: float = 10.0) -> None:
    """Wait for the job's lease to run out on the store's clock and rescue it."""

    def rescued() -> bool:
        return any(r.job_id == job_id for r in store.sweep(prune=False).rescued)

    wait_until(rescued, timeout=timeout, what=f"the lease of {job_id} to expire and be rescued")


def race(script: str, *args: str, timeout: float) -> tuple[list[str], list[int | None]]:
    """Four processes run `script` (`python -c`, in this directory) and start together: each
    prints "ready" once set up, then all are told "go" at once. Returns each one's output and
    exit code; any still running when the test gives up is killed."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent,
        )
        for _ in range(4)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outputs, [p.returncode for p in procs]


def drain_in_threads(store_url: str, end: Callable[[Store, Reservation], None]) -> None:
    """Four threads, each with a store of its own, reserve from "default" until it is empty
    and end each attempt with `end`: members ending at once. Raises what any thread raised."""
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        own = open_store(store_url)
        me = WorkerRef(id=f"w{n}", host="h", pid=n)
        try:
            while got := own.reserve(queues=["default"], worker=me, lease=30, limit=2):
                for r in got:
                    end(own, r)
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []

"""An attempt's cause (tenure.core.causes): written with its end, kept by every backend, and set by
the recovery sweep when the worker vanished."""

from __future__ import annotations

from dataclasses import replace

from conformance.helpers import W1, attempt, enqueue, expire_and_rescue, new_job, reserve_one
from tenure.core import causes
from tenure.core.records import Ending, WorkerRecord
from tenure.stores import Store


def test_the_cause_given_with_an_end_is_read_back(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="crashed",
            error="child process (pid 9) was killed by signal 9 (SIGKILL)",
            cause=causes.OOM_KILL,
        )
    )
    assert attempt(store, job_id, 1).cause == causes.OOM_KILL


def test_an_end_without_a_cause_records_none(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store)
    store.end_attempt(Ending(job_id=job_id, token=r.token))
    assert attempt(store, job_id, 1).cause is None


def test_a_rescued_attempt_names_the_vanished_worker(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    store.reserve(queues=["default"], worker=W1, lease=0.2, limit=1)
    expire_and_rescue(store, job_id)
    got = attempt(store, job_id, 1)
    assert (got.outcome, got.cause) == ("crashed", causes.WORKER_VANISHED)


def test_an_attempt_of_a_worker_that_had_begun_stopping_is_named_a_deploy_kill(
    store: Store,
) -> None:
    record = WorkerRecord(
        id=W1.id,
        host=W1.host,
        pid=W1.pid,
        queues=("default",),
        concurrency=1,
        started_at=0.0,
        last_seen_at=0.0,
    )
    store.heartbeat(worker=record)
    (job_id,) = enqueue(store, new_job())
    store.reserve(queues=["default"], worker=W1, lease=0.5, limit=1)
    store.heartbeat(worker=replace(record, stopping_at=0.0))  # its SIGTERM: stamped now
    (seen,) = [w for w in store.list_workers() if w.id == W1.id]
    assert seen.stopping_at is not None and seen.stopped_at is None
    expire_and_rescue(store, job_id)
    got = attempt(store, job_id, 1)
    assert (got.outcome, got.cause) == ("crashed", causes.DEPLOY)
    assert "killed at the end of a deploy's grace" in (got.error or "")
    assert f"worker {W1.id}" in (got.error or "") and "received SIGTERM at" in (got.error or "")


def test_the_last_memory_reading_of_a_heartbeat_is_the_rescues_evidence(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store, lease=1.0)
    store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=1.0, memory={job_id: 1900.4})
    assert attempt(store, job_id, 1).memory_mb == 1900.4
    # a beat without a reading keeps the last one
    store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=0.5)
    assert attempt(store, job_id, 1).memory_mb == 1900.4
    expire_and_rescue(store, job_id)
    got = attempt(store, job_id, 1)
    assert (got.outcome, got.cause) == ("crashed", causes.WORKER_VANISHED)
    assert "the attempt's last memory reading was 1900 MB" in (got.error or "")


def test_an_attempt_never_read_has_no_memory_and_says_none(store: Store) -> None:
    (job_id,) = enqueue(store, new_job())
    r = reserve_one(store, lease=0.5)
    store.heartbeat(worker=W1, leases=[(job_id, r.token)], lease=0.5, memory={})
    assert attempt(store, job_id, 1).memory_mb is None
    expire_and_rescue(store, job_id)
    assert "memory reading" not in (attempt(store, job_id, 1).error or "")

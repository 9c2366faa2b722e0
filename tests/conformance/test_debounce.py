"""Debounce held in the store (issue 31), on every backend: dispatches of one key while its
pending job still waits for its time collapse into that one job, which takes the last
arguments and runs `debounce` seconds after the last dispatch; every dispatch gets its id.
Once the job is due or started, a new dispatch starts a new window.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.helpers import W1, counts, job, new_job, wait_until
from tenure.core.guards import Guards
from tenure.core.records import NewJob
from tenure.stores import Store


def debounced(key: str, version: int, window: float = 2.0) -> NewJob:
    return replace(
        new_job(payload=f'{{"args":[7,{version}],"kwargs":{{}}}}', delay=window),
        guards=Guards(debounce_key=key, debounce=window),
    )


def test_dispatches_within_the_window_collapse_into_one_job_with_the_last_arguments(
    store: Store,
) -> None:
    first = debounced("reindex:7", 1)
    ids = store.enqueue_many([first])
    before = job(store, first.id).run_at
    for version in range(2, 6):
        ids += store.enqueue_many([debounced("reindex:7", version)])
    assert ids == [first.id] * 5  # every dispatch returns the one job's id
    record = job(store, first.id)
    assert counts(store)["scheduled"] == 1
    assert record.payload == '{"args":[7,5],"kwargs":{}}'  # the last arguments
    assert record.run_at >= before  # its time moved with the last dispatch
    assert record.run_at >= store.now() + 1.5


def test_several_dispatches_of_one_key_in_one_call_are_one_job(store: Store) -> None:
    jobs = [debounced("k", v) for v in range(3)]
    ids = store.enqueue_many(jobs)
    assert ids == [jobs[0].id] * 3
    assert job(store, jobs[0].id).payload == '{"args":[7,2],"kwargs":{}}'


def test_keys_are_apart_and_a_started_job_opens_a_new_window(store: Store) -> None:
    a, b = debounced("a", 1, window=0.2), debounced("b", 1, window=0.2)
    assert store.enqueue_many([a, b]) == [a.id, b.id]

    def started() -> bool:
        return len(store.reserve(queues=["default"], worker=W1, lease=30, limit=2)) > 0

    wait_until(started, timeout=10, what="the debounced jobs to come due")
    later = debounced("a", 2, window=0.2)
    assert store.enqueue_many([later]) == [later.id]  # a new window: a new job
    assert job(store, later.id).state == "scheduled"

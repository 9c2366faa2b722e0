"""Priorities: within a queue, lower runs first and jobs of one priority run in the order they
were sent; the order of `--queues` across queues is unchanged by them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import tenure
from conformance.helpers import W1, enqueue, expire_and_rescue, job, new_job, reserve_one
from tenure.core.records import Ending
from tenure.stores import Store


def drain_order(store: Store, queues: tuple[str, ...] = ("default",)) -> list[str]:
    """Ids in the order reserve hands them out, one at a time, each completed before the next
    (and so through complete_and_reserve, the worker's hot path)."""
    order: list[str] = []
    held = store.reserve(queues=queues, worker=W1, lease=30)
    while held:
        order.append(held[0].job_id)
        _, following = store.end_attempt(
            Ending(job_id=held[0].job_id, token=held[0].token), queues=queues, worker=W1, lease=30
        )
        held = [following] if following is not None else []
    return order


def test_lower_priority_runs_first_and_fifo_within_a_priority(store: Store) -> None:
    jobs = [replace(new_job(), priority=p) for p in (5, 0, -3, 5, 0, -3, 10, 0)]
    store.enqueue_many(jobs[:4])
    store.enqueue_many(jobs[4:])  # a second call: FIFO holds across calls too
    by_priority = sorted(range(len(jobs)), key=lambda i: (jobs[i].priority, i))
    assert drain_order(store) == [jobs[i].id for i in by_priority]
    assert job(store, jobs[2].id).priority == -3


def test_a_batch_of_reserves_takes_the_lowest_priorities(store: Store) -> None:
    low, high, default = (replace(new_job(), priority=p) for p in (-1, 7, 0))
    enqueue(store, high, default, low)
    got = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    assert [r.job_id for r in got] == [low.id, default.id]


def test_queue_order_comes_before_priority(store: Store) -> None:
    urgent_elsewhere = replace(new_job(queue="low"), priority=-100)
    plain = new_job(queue="high")
    enqueue(store, urgent_elsewhere, plain)
    assert drain_order(store, ("high", "low")) == [plain.id, urgent_elsewhere.id]


def test_a_retried_job_keeps_its_priority(store: Store) -> None:
    first, second = (replace(new_job(), priority=p) for p in (1, 2))
    enqueue(store, first, second)
    held = reserve_one(store, lease=1)
    assert held.job_id == first.id
    expire_and_rescue(store, first.id)  # crashed: back in the queue at once (no backoff)
    third = replace(new_job(), priority=1)
    enqueue(store, third)
    assert drain_order(store) == [first.id, third.id, second.id]


def test_a_scheduled_job_waits_for_its_time_whatever_its_priority(store: Store) -> None:
    later = replace(new_job(delay=60), priority=-5)
    now = new_job()
    enqueue(store, later, now)
    assert drain_order(store) == [now.id]
    assert job(store, later.id).state == "scheduled"
    assert store.queue_counts()["default"]["scheduled"] == 1


@pytest.fixture
def app(store_url: str, store: Store) -> Iterator[tenure.App]:
    application = tenure.App(store_url)
    try:
        yield application
    finally:
        application.close()


def test_priority_from_the_job_and_from_options(app: tenure.App, store: Store) -> None:
    @app.job(priority=3)
    def report(n: int) -> None: ...

    late = report.dispatch(1)
    urgent = report.options(priority=-1).dispatch(2)
    plain = report.options(priority=0).dispatch(3)
    members = app.batch([report.options(priority=-2).sig(4)], name="b")
    (member,) = [j for j in app.list_jobs() if j.batch_id == members.id]
    assert [app.get_job(h.id).priority for h in (late, urgent, plain)] == [3, -1, 0]
    assert drain_order(store) == [member.id, urgent.id, plain.id, late.id]

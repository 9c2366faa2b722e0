"""Fair share held in the store (issue 31), on every backend: within a queue (and priority),
ready jobs with a fair_key are taken round robin across keys, FIFO within one key, a key of
weight w taking w turns for another's one; a tenant that arrives late or comes back after a
pause starts at the queue's present, not behind a big tenant's backlog."""

from __future__ import annotations

import collections
from dataclasses import replace

from conformance.helpers import W1, new_job
from tenure.core.guards import Guards
from tenure.core.records import NewJob
from tenure.stores import Store


def fair(tenant: str, n: int, weight: float = 1.0) -> NewJob:
    return replace(
        new_job(payload=f'{{"args":["{tenant}",{n}],"kwargs":{{}}}}'),
        guards=Guards(fair_key=tenant, fair_weight=weight),
    )


def taken(store: Store, count: int) -> list[str]:
    """The tenants of the next `count` reservations, in order ('?' for a plain job)."""
    ids: list[str] = []
    while len(ids) < count:
        got = store.reserve(queues=["default"], worker=W1, lease=60, limit=10)
        if not got:
            break
        ids += [r.job_id for r in got]
    records = {r.id: r for r in store.list_jobs(ids=ids[:count])}
    return [records[i].payload.split('"')[3] for i in ids[:count]]


def test_a_small_tenant_behind_a_big_ones_backlog_runs_within_the_first_60(
    store: Store,
) -> None:
    store.enqueue_many([fair("big", n) for n in range(200)])
    store.enqueue_many([fair("small", n) for n in range(20)])
    first = taken(store, 60)
    assert first.count("small") == 20
    assert first[:2] in (["big", "small"], ["small", "big"])  # turns, not a block


def test_fifo_within_a_tenant(store: Store) -> None:
    jobs = [fair("t", n) for n in range(5)] + [fair("u", n) for n in range(5)]
    store.enqueue_many(jobs)
    order = []
    for r in store.reserve(queues=["default"], worker=W1, lease=60, limit=10):
        order.append(next(j for j in jobs if j.id == r.job_id))
    assert [j.payload for j in order if '"t"' in j.payload] == [
        j.payload for j in jobs if '"t"' in j.payload
    ]


def test_weights_3_to_1_give_about_3_turns_for_1(store: Store) -> None:
    store.enqueue_many([fair("enterprise", n, weight=3) for n in range(100)])
    store.enqueue_many([fair("free", n) for n in range(100)])
    shares = collections.Counter(taken(store, 40))
    assert 2.0 <= shares["enterprise"] / shares["free"] <= 4.5, shares


def test_a_tenant_coming_back_starts_at_the_present(store: Store) -> None:
    store.enqueue_many([fair("a", n) for n in range(30)])
    assert taken(store, 30).count("a") == 30  # a's turns are used up, the queue is empty
    store.enqueue_many([fair("b", n) for n in range(30)])
    store.enqueue_many([fair("a", n) for n in range(3)])
    assert taken(store, 8).count("a") == 3  # not behind b's whole backlog

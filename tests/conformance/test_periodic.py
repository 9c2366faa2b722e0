"""Periodic jobs held in the store: each due time claimed once, its run enqueued with the claim,
the first due time seen recorded without a run, and a skipped due time moving the state on."""

from __future__ import annotations

import threading
from dataclasses import replace

from conformance.helpers import counts, job, new_job, reserve_one
from tenure.core.records import NewJob, PeriodicRecord
from tenure.stores import Store

DUE = 1_800_000_000.0  # whole seconds, as a schedule's due times are
EVERY = 300.0


def run_of(name: str, due: float, queue: str = "default") -> NewJob:
    return replace(new_job(name=name, queue=queue), id=f"p{int(due)}{name}")


def claim(store: Store, due: float, *, name: str = "refresh", queue: str = "default") -> str:
    return store.claim_periodic(name=name, queue=queue, due=due, job=run_of(name, due, queue))


def test_the_first_due_time_seen_is_recorded_without_a_run(store: Store) -> None:
    assert claim(store, DUE) == "recorded"
    assert store.list_periodic() == [PeriodicRecord("refresh", DUE, None)]
    assert counts(store)["queued"] == 0


def test_a_later_due_time_is_dispatched_once_with_its_claim(store: Store) -> None:
    claim(store, DUE)
    assert claim(store, DUE + EVERY) == "dispatched"
    run = run_of("refresh", DUE + EVERY)
    assert job(store, run.id).state == "queued"
    assert reserve_one(store).job_id == run.id
    assert store.list_periodic() == [PeriodicRecord("refresh", DUE + EVERY, run.id)]
    # the same due time again (another worker, or a retry after a lost reply), or an older one
    assert claim(store, DUE + EVERY) == "taken"
    assert claim(store, DUE) == "taken"
    assert counts(store)["queued"] + counts(store)["running"] == 1


def test_a_skipped_due_time_moves_the_state_on_and_keeps_the_last_run(store: Store) -> None:
    claim(store, DUE)
    claim(store, DUE + EVERY)
    later = DUE + 10 * EVERY
    assert store.claim_periodic(name="refresh", queue="default", due=later, job=None) == "recorded"
    assert store.list_periodic() == [
        PeriodicRecord("refresh", later, run_of("refresh", DUE + EVERY).id)
    ]
    assert claim(store, later) == "taken"
    assert counts(store)["queued"] == 1


def test_racing_claims_of_one_due_time_dispatch_it_once(store: Store, other_store: Store) -> None:
    claim(store, DUE)
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(s: Store, due: float) -> None:
        start.wait(timeout=30)
        outcome = claim(s, due)
        with lock:
            outcomes.append(outcome)

    for round_ in range(1, 4):
        due = DUE + round_ * EVERY
        threads = [
            threading.Thread(target=worker, args=(store if i % 2 else other_store, due))
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        start.reset()
    assert sorted(outcomes) == sorted(["dispatched"] * 3 + ["taken"] * 21)
    assert counts(store)["queued"] == 3


def test_each_periodic_job_has_its_own_state_in_its_own_queue(store: Store) -> None:
    claim(store, DUE, name="rates", queue="fx")
    claim(store, DUE, name="report")
    assert claim(store, DUE + EVERY, name="rates", queue="fx") == "dispatched"
    assert [r.name for r in store.list_periodic()] == ["rates", "report"]
    listed = {r.name: r for r in store.list_periodic()}
    assert listed["rates"].last_job_id == run_of("rates", DUE + EVERY, "fx").id
    assert listed["report"] == PeriodicRecord("report", DUE, None)
    assert job(store, run_of("rates", DUE + EVERY, "fx").id).queue == "fx"

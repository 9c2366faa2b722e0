"""Damaged rows, written behind the store's back, must fail their own job, not the reader.

A payload that is not JSON is handed out as it is (the worker fails that job with a clear
reason); a policy that cannot be read falls back to the safe defaults.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from backends.kit import Kit
from conformance.helpers import W1, counts, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.guards import Guards
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores import Store


def damage(kit: Kit, job_id: str, field: str, value: str) -> None:
    assert kit.damage_job(job_id, field, value) == 1, f"no stored job {job_id} to damage"


DAMAGED_POLICIES = ["{not json", "[1, 2]", "null", '"tries"', ""]


def test_a_payload_that_is_not_json_is_handed_out_as_it_is(store: Store, kit: Kit) -> None:
    (job_id,) = enqueue(store, new_job())
    damage(kit, job_id, "payload", "\x01not json {")
    assert job(store, job_id).payload == "\x01not json {"
    r = reserve_one(store)
    assert r.payload == "\x01not json {"
    # the worker fails it for good, with the reason
    result, _ = store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="failed",
            error="corrupt payload: not JSON",
            permanent=True,
        )
    )
    assert result.state == "failed"
    assert [j.id for j in store.list_jobs(state="failed")] == [job_id]


@pytest.mark.parametrize("damaged", DAMAGED_POLICIES)
def test_a_policy_that_cannot_be_read_falls_back_to_the_defaults(
    store: Store, kit: Kit, damaged: str
) -> None:
    good, bad = enqueue(store, new_job(), new_job())
    damage(kit, bad, "policy", damaged)
    assert job(store, bad).policy == Policy()
    assert [j.id for j in store.list_jobs()] == [bad, good]
    handed = store.reserve(queues=["default"], worker=W1, lease=0.3, limit=5)
    assert {r.job_id for r in handed} == {good, bad}
    assert next(r for r in handed if r.job_id == bad).policy == Policy()
    # ending and rescuing it obey the default policy instead of crashing
    token = next(r for r in handed if r.job_id == bad).token
    result, _ = store.end_attempt(Ending(job_id=bad, token=token, outcome="failed", error="e"))
    assert result.accepted and result.state in ("queued", "scheduled")
    wait_until(lambda: store.sweep(prune=False).rescued, what="the good job's lease to expire")
    assert job(store, good).attempts[0].outcome == "crashed"
    assert counts(store)["running"] == 0


def test_a_counter_at_its_limit_fails_its_own_job_not_the_recovery_sweep(
    store: Store, kit: Kit
) -> None:
    """tries_used at the largest 32-bit integer: one more try is out of a typed column's range.
    The sweep must still rescue the other crashed jobs, and the damaged one end for good."""
    damaged, other = enqueue(store, new_job(), new_job())
    handed = store.reserve(queues=["default"], worker=W1, lease=0.3, limit=2)
    assert {r.job_id for r in handed} == {damaged, other}
    damage(kit, damaged, "tries_used", "2147483647")
    wait_until(lambda: store.sweep(prune=False).rescued, what="the leases to expire")
    assert job(store, other).attempts[0].outcome == "crashed"
    assert job(store, other).state in ("queued", "scheduled")
    assert job(store, damaged).state == "failed"
    assert counts(store)["running"] == 0


def test_a_damaged_holder_failed_by_the_sweep_frees_its_concurrency_slot(
    store: Store, kit: Kit
) -> None:
    """The damaged job's own end is undone and replaced by a failure: its slot must still be
    given back, or its key would run nothing again."""
    damaged, parked = (
        replace(new_job(), guards=Guards(concurrency_key="k", concurrency_limit=1))
        for _ in range(2)
    )
    enqueue(store, damaged, parked)
    [held] = store.reserve(queues=["default"], worker=W1, lease=0.3, limit=2)
    assert held.job_id == damaged.id  # the other one is parked
    damage(kit, damaged.id, "tries_used", "2147483647")

    def failed() -> bool:
        store.sweep(prune=False)
        return job(store, damaged.id).state == "failed"

    wait_until(failed, what="the sweep to fail the damaged job once its lease expired")
    assert [r.job_id for r in store.reserve(queues=["default"], worker=W1, lease=30)] == [parked.id]

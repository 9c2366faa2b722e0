"""Migration 0018 (the guard indexes on guard_state, issue 35): a store at version 17 with
plain and guarded jobs in every state (an overlap key's running holder and a job waiting
behind it, a concurrency key's running holder and a parked job, a debounced job pending, a
guarded job failed, plain ones queued and succeeded) is upgraded in place, every row intact;
each guarded job's guard_state is its state and each plain job's NULL, the guard indexes hold
what they held, and the guards go on working: the overlap holder still defers the other, the
parked job is handed its slot, a new dispatch of the debounce key replaces the pending job.
A statement that moves a guarded job's state and not its guard_state is refused."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.helpers import W1, new_job
from tenure.core.guards import Guards
from tenure.core.records import Ending
from tenure.stores.base import get_job
from tenure.stores.sqlite import SQLiteStore

from .older import entries, store_at, upgrade

BEFORE = 17


def guard_states(path: Path) -> dict[str, str | None]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT id, guard_state FROM tenure_jobs").fetchall())


def test_a_version_17_store_with_guarded_jobs_is_upgraded_and_its_guards_hold(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v17.db"
    store = store_at(path, BEFORE)
    overlap = Guards(overlap_key="o")
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    plain_done, plain_waiting = store.enqueue_many([new_job(), new_job()])
    (done,) = store.reserve(queues=["default"], worker=W1, lease=30.0)
    assert store.end_attempt(Ending(job_id=done.job_id, token=done.token))[0].accepted
    o_holder = store.enqueue_many([replace(new_job(queue="o"), guards=overlap)])[0]
    (o_slot,) = store.reserve(queues=["o"], worker=W1, lease=30.0)
    o_other = store.enqueue_many([replace(new_job(queue="o"), guards=overlap)])[0]
    k_holder, k_parked = store.enqueue_many(
        [replace(new_job(queue="k"), guards=limited) for _ in range(2)]
    )
    (k_slot,) = store.reserve(queues=["k"], worker=W1, lease=30.0, limit=2)
    debounced = Guards(debounce_key="d")
    pending = store.enqueue_many([replace(new_job(queue="d", delay=3600.0), guards=debounced)])[0]
    failing = store.enqueue_many([replace(new_job(queue="f"), guards=Guards(overlap_key="f"))])[0]
    (f_slot,) = store.reserve(queues=["f"], worker=W1, lease=30.0)
    store.end_attempt(Ending(job_id=failing, token=f_slot.token, outcome="failed", permanent=True))
    assert (o_slot.job_id, k_slot.job_id, done.job_id) == (o_holder, k_holder, plain_done)

    with upgrade(store, path, BEFORE) as upgraded:
        assert guard_states(path) == {
            plain_done: None,
            plain_waiting: None,
            o_holder: "running",
            o_other: "queued",
            k_holder: "running",
            k_parked: "queued",
            pending: "queued",
            failing: "failed",
        }
        assert entries(path, "tenure_jobs_overlap") == 3  # every job with the key, as before
        assert entries(path, "tenure_jobs_slots") == 1
        assert entries(path, "tenure_jobs_parked") == 1
        assert entries(path, "tenure_jobs_debounce") == 1
        # the overlap holder still holds its key: the other is deferred, not run
        assert upgraded.reserve(queues=["o"], worker=W1, lease=30.0) == []
        # the concurrency key's holder ends and hands its slot to the parked job
        ended, following = upgraded.end_attempt(
            Ending(job_id=k_holder, token=k_slot.token), queues=["k"], worker=W1, lease=30.0
        )
        assert ended.accepted and following is not None and following.job_id == k_parked
        # a new dispatch of the debounce key stands in for the pending job
        again = upgraded.enqueue_many([replace(new_job(queue="d"), guards=debounced)])
        assert again == [pending]
        # and the plain job drains on the plain path
        (plain,) = upgraded.reserve(queues=["default"], worker=W1, lease=30.0)
        assert upgraded.end_attempt(Ending(job_id=plain.job_id, token=plain.token))[0].accepted
        assert guard_states(path)[plain_waiting] is None
        assert guard_states(path)[k_parked] == "running"
        assert guard_states(path)[k_holder] == "succeeded"
        holder_job = get_job(upgraded, o_holder)
        assert holder_job is not None and holder_job.state == "running"


def test_a_guarded_job_moved_without_its_guard_state_is_refused(tmp_path: Path) -> None:
    # The quiet twin: the same statement on a plain job is allowed (its guard_state is NULL).
    store = SQLiteStore(f"sqlite:///{tmp_path / 'check.db'}")
    guarded = store.enqueue_many([replace(new_job(), guards=Guards(overlap_key="o"))])[0]
    plain = store.enqueue_many([new_job()])[0]
    store.close()
    with sqlite3.connect(tmp_path / "check.db") as conn:
        conn.execute("UPDATE tenure_jobs SET state = 'cancelled' WHERE id = ?", (plain,))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute("UPDATE tenure_jobs SET state = 'cancelled' WHERE id = ?", (guarded,))

"""Migration 0017 (one ready index; a failed or cancelled job in one index, issue 35): a store
at version 16 with jobs in every state (queued at two priorities, scheduled, parked behind a
concurrency key, fair, running, succeeded, failed and due, cancelled, retried) is upgraded in
place, every row intact; the dropped indexes are gone, and what they answered (the counts of
scheduled and parked jobs, the oldest queued job, the fair-share head, retention of failed
jobs, the listings) is read from the indexes left, with the same answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.helpers import W1, new_job
from tenure.core.guards import Guards
from tenure.core.records import Ending
from tenure.core.retention import Keep
from tenure.stores.base import get_job

from .older import entries, index_names, store_at, upgrade

BEFORE = 16
DUE = Keep(succeeded=0.0, failed=0.0)  # due for pruning as soon as it ends


def test_a_version_16_store_with_jobs_in_every_state_is_upgraded_intact(tmp_path: Path) -> None:
    path = tmp_path / "v16.db"
    store = store_at(path, BEFORE)
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    done, failed, running, crashed = store.enqueue_many(
        [replace(new_job(), keep=DUE) for _ in range(4)]
    )
    urgent = store.enqueue_many([replace(new_job(), priority=-1)])[0]
    later = store.enqueue_many([replace(new_job(), priority=5)])[0]
    store.enqueue_many([new_job(delay=3600.0)])  # scheduled
    store.enqueue_many([replace(new_job(queue="fair"), guards=Guards(fair_key="t1"))])
    to_cancel = store.enqueue_many([new_job(queue="other")])[0]
    assert store.cancel(to_cancel).state == "cancelled"
    taken = store.reserve(queues=["default"], worker=W1, lease=30.0, limit=6)
    assert [r.job_id for r in taken] == [urgent, done, failed, running, crashed, later]
    by_id = {r.job_id: r for r in taken}
    for job_id in (urgent, done, later):
        assert store.end_attempt(Ending(job_id=job_id, token=by_id[job_id].token))[0].accepted
    store.end_attempt(
        Ending(job_id=failed, token=by_id[failed].token, outcome="failed", permanent=True)
    )
    store.end_attempt(  # a retry: queued again, with one ended attempt
        Ending(job_id=crashed, token=by_id[crashed].token, outcome="crashed", cause="oom-killer")
    )
    holder, parked = store.enqueue_many(
        [replace(new_job(queue="limited"), guards=limited) for _ in range(2)]
    )
    (slot,) = store.reserve(queues=["limited"], worker=W1, lease=30.0, limit=2)
    assert slot.job_id == holder  # and the other parked behind it
    counts_before = store.queue_counts(keys=True)

    with upgrade(store, path, BEFORE) as upgraded:
        names = index_names(path)
        assert "tenure_jobs_ready" not in names and "tenure_jobs_prune_failed" not in names
        assert entries(path, "tenure_jobs_state") == 2  # the failed and the cancelled job
        # queued: the retried one, the scheduled one, the fair one, the parked one
        assert entries(path, "tenure_jobs_ready_by_priority") == 4
        counts = upgraded.queue_counts(keys=True)
        assert counts == counts_before
        assert (counts["default"]["queued"], counts["default"]["scheduled"]) == (1, 1)
        assert counts["limited"].waiting == 1 and counts["limited"]["running"] == 1
        assert counts["default"].oldest_ready_age is not None
        assert [j.id for j in upgraded.list_jobs(state="failed", queue="default")] == [failed]
        assert {j.id for j in upgraded.list_jobs(state="cancelled")} == {to_cancel}
        assert {j.id for j in upgraded.list_jobs(state="queued", queue="default")} == {crashed}
        retried = get_job(upgraded, crashed)
        assert retried is not None and [(a.outcome, a.cause) for a in retried.attempts] == [
            ("crashed", "oom-killer")
        ]
        # retention reads the merged state index: the failed job is due and goes
        upgraded.sweep(rescue=False)
        assert get_job(upgraded, failed) is None
        assert get_job(upgraded, to_cancel) is not None  # its keep is the default 30 days
        # a new tenant of the fair queue starts at its head, after the one waiting there
        newcomer = upgraded.enqueue_many(
            [replace(new_job(queue="fair"), guards=Guards(fair_key="t2"))]
        )[0]
        order = [
            r.job_id for r in upgraded.reserve(queues=["fair"], worker=W1, lease=30.0, limit=2)
        ]
        assert order[1] == newcomer
        # and its life goes on: the holder ends and hands its slot to the parked job
        ended, following = upgraded.end_attempt(
            Ending(job_id=holder, token=slot.token), queues=["limited"], worker=W1, lease=30.0
        )
        assert ended.accepted and following is not None and following.job_id == parked
        assert upgraded.end_attempt(Ending(job_id=running, token=by_id[running].token))[0].accepted

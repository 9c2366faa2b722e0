"""Migration 0015 (a succeeded job in one index, issue 35): a store at version 14 with jobs in
every state (succeeded alone and in a batch, failed, cancelled, retried, running, queued,
scheduled) is upgraded in place, every row intact; the succeeded ones are in retention's
succeeded index, the failed and cancelled ones in the state index, and the counts, the
listings, retention and the store's life go on from there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.helpers import W1, new_job
from tenure.core.records import Ending, NewBatch
from tenure.core.retention import Keep
from tenure.stores.base import get_job

from .older import entries, rows, store_at, upgrade

BEFORE = 14
DUE = Keep(succeeded=0.0, failed=0.0)  # due for pruning as soon as it ends


def test_a_version_14_store_with_jobs_in_every_state_is_upgraded_intact(tmp_path: Path) -> None:
    path = tmp_path / "v14.db"
    store = store_at(path, BEFORE)
    plain = store.enqueue_many([replace(new_job(), keep=DUE)] + [new_job() for _ in range(4)])
    store.enqueue_many([new_job(delay=3600.0)])  # scheduled
    members = store.enqueue_many(
        [new_job(queue="batched") for _ in range(2)], batch=NewBatch(id="b1", name="b")
    )
    to_cancel = store.enqueue_many([new_job(queue="other")])[0]
    assert store.cancel(to_cancel).state == "cancelled"
    due, failed, crashed, running = store.reserve(
        queues=["default"], worker=W1, lease=30.0, limit=4
    )
    assert due.job_id == plain[0]
    assert store.end_attempt(Ending(job_id=due.job_id, token=due.token))[0].accepted
    store.end_attempt(
        Ending(
            job_id=failed.job_id, token=failed.token, outcome="failed", error="boom", permanent=True
        )
    )
    store.end_attempt(  # a retry: queued again, with one ended attempt
        Ending(job_id=crashed.job_id, token=crashed.token, outcome="crashed", cause="oom-killer")
    )
    member = store.reserve(queues=["batched"], worker=W1, lease=30.0)[0]
    assert store.end_attempt(Ending(job_id=member.job_id, token=member.token))[0].accepted
    jobs, attempts = rows(path, "tenure_jobs"), rows(path, "tenure_attempts")
    assert len(jobs) == 9 and len(attempts) == 5

    with upgrade(store, path, BEFORE) as upgraded:
        # the succeeded job and the succeeded member; the failed and the cancelled job
        assert entries(path, "tenure_jobs_succeeded") == 2
        assert entries(path, "tenure_jobs_state") == 2
        assert entries(path, "tenure_jobs_prune_succeeded") == 0  # dropped
        counts = upgraded.queue_counts()
        assert (counts["default"]["succeeded"], counts["default"]["failed"]) == (1, 1)
        assert (counts["default"]["queued"], counts["default"]["running"]) == (2, 1)
        assert counts["default"]["scheduled"] == 1
        assert (counts["batched"]["succeeded"], counts["batched"]["queued"]) == (1, 1)
        assert counts["other"]["cancelled"] == 1
        listed = {j.id for j in upgraded.list_jobs(state="succeeded")}
        assert listed == {due.job_id, member.job_id}
        assert {j.id for j in upgraded.list_jobs(state="cancelled")} == {to_cancel}
        assert [j.id for j in upgraded.list_jobs(state="failed", queue="default")] == [
            failed.job_id
        ]
        retried = get_job(upgraded, crashed.job_id)
        assert retried is not None and retried.state == "queued"
        assert [(a.number, a.outcome, a.cause) for a in retried.attempts] == [
            (1, "crashed", "oom-killer")
        ]
        # retention reads the new index: the due job goes, the batch member stays with its
        # batch (which still runs)
        upgraded.sweep(rescue=False)
        assert get_job(upgraded, due.job_id) is None
        assert get_job(upgraded, member.job_id) is not None
        # and its life goes on: the running attempt ends, the queued ones run
        assert upgraded.end_attempt(Ending(job_id=running.job_id, token=running.token))[0].accepted
        while got := upgraded.reserve(queues=["default", "batched"], worker=W1, lease=30.0):
            assert upgraded.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token))[
                0
            ].accepted
        after = upgraded.queue_counts()
        # the one pruned gone; the one that ran, the queued one and the retried one
        assert after["default"]["succeeded"] == 3 and after["batched"]["succeeded"] == 2
        assert entries(path, "tenure_jobs_succeeded") == 5
        assert entries(path, "tenure_jobs_state") == 2
        assert members[1] in {j.id for j in upgraded.list_jobs(state="succeeded")}

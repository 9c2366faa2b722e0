"""Migration 0013 (the lean hot path, issue 35): a store at version 12 with jobs in every state
and their attempts is upgraded in place, every row intact; tenure_jobs_state holds the
finished jobs only, and the store's life goes on from there."""

from __future__ import annotations

from pathlib import Path

from conformance.helpers import W1, new_job
from tenure.core.records import Ending
from tenure.stores.base import get_job

from .older import rows, store_at, upgrade

BEFORE = 12


def test_a_version_12_store_with_jobs_is_upgraded_with_every_row_intact(tmp_path: Path) -> None:
    path = tmp_path / "v12.db"
    store = store_at(path, BEFORE)
    ids = store.enqueue_many([new_job() for _ in range(5)])
    done, failed, crashed, running = store.reserve(
        queues=["default"], worker=W1, lease=30.0, limit=4
    )
    assert store.end_attempt(Ending(job_id=done.job_id, token=done.token))[0].accepted
    store.end_attempt(
        Ending(
            job_id=failed.job_id, token=failed.token, outcome="failed", error="boom", permanent=True
        )
    )
    store.end_attempt(  # a retry: queued again, with one ended attempt
        Ending(job_id=crashed.job_id, token=crashed.token, outcome="crashed", cause="oom-killer")
    )
    jobs, attempts = rows(path, "tenure_jobs"), rows(path, "tenure_attempts")
    assert len(jobs) == 5 and len(attempts) == 4

    with upgrade(store, path, BEFORE) as upgraded:
        # (the index it made, tenure_jobs_state, is narrowed again by 0015: see its test)
        retried = get_job(upgraded, crashed.job_id)
        assert retried is not None and retried.state == "queued"
        assert [(a.number, a.outcome, a.cause) for a in retried.attempts] == [
            (1, "crashed", "oom-killer")
        ]
        counts = upgraded.queue_counts()["default"]
        assert (counts["queued"], counts["running"]) == (2, 1)
        assert (counts["succeeded"], counts["failed"]) == (1, 1)
        # and its life goes on: the running attempt ends, the queued ones run, the retried
        # one as its second attempt
        assert upgraded.end_attempt(Ending(job_id=running.job_id, token=running.token))[0].accepted
        while got := upgraded.reserve(queues=["default"], worker=W1, lease=30.0):
            assert upgraded.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token))[
                0
            ].accepted
        assert upgraded.queue_counts()["default"]["succeeded"] == 4
        again = get_job(upgraded, crashed.job_id)
        assert again is not None
        assert [a.number for a in again.attempts] == [1, 2]
        assert {j.id for j in upgraded.list_jobs(state="succeeded")} == set(ids) - {failed.job_id}

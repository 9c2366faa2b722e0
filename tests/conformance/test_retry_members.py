"""Retrying a failed batch member by hand (`retry_job`, `tenure failed retry`), the same on every
backend.

The rule (tenure.core.batch.member_retried): while its batch runs, a failed member goes back to the
batch's pending work, so the batch counts it once when it ends again, whichever way; once the
batch has failed, been cancelled or settled, its callbacks ran and its queued members were
settled, so the retry is refused and the member stays failed. A job outside any batch retries
as before.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Sequence

import pytest

import tenure
from conformance.helpers import W1, batch, job, new_job, reserve_one
from tenure.core.records import Ending, NewBatch, NewJob
from tenure.core.retry import Policy
from tenure.stores import Store

ONE_TRY = Policy(tries=1, backoff=0)
CALLBACKS = "callbacks"


def make_batch(store: Store, members: Sequence[NewJob], *, allow_failures: bool) -> str:
    batch_id = secrets.token_hex(6)
    store.enqueue_many(
        list(members),
        batch=NewBatch(
            id=batch_id,
            name="exports",
            allow_failures=allow_failures,
            then=new_job(queue=CALLBACKS, name="then"),
            catch=new_job(queue=CALLBACKS, name="catch"),
            finally_=new_job(queue=CALLBACKS, name="finally"),
        ),
    )
    return batch_id


def counts(store: Store, batch_id: str) -> tuple[str, int, int, int, int]:
    b = batch(store, batch_id)
    return b.state, b.jobs, b.done, b.failed, b.pending


def callbacks(store: Store) -> list[str]:
    return sorted(j.name for j in store.list_jobs(queue=CALLBACKS))


def members(n: int) -> list[NewJob]:
    # one queue each, so a test picks which member runs next whatever the clock's resolution
    return [new_job(policy=ONE_TRY, queue=f"m{i}") for i in range(n)]


def run(store: Store, member: NewJob, *, fail: bool, progress: float | None = None) -> None:
    """Reserve this member and end it."""
    r = reserve_one(store, queues=[member.queue])
    assert r.job_id == member.id, f"expected {member.id} to be reserved, got {r.job_id}"
    if progress is not None:
        store.report_progress(job_id=r.job_id, token=r.token, fraction=progress)
    if fail:
        store.end_attempt(Ending(job_id=r.job_id, token=r.token, outcome="failed", error="boom"))
    else:
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted


@pytest.mark.batches_across_queues
def test_a_retried_member_of_a_running_batch_is_counted_once_when_it_succeeds(
    store: Store,
) -> None:
    a, b, c = members(3)
    batch_id = make_batch(store, [a, b, c], allow_failures=True)
    run(store, a, fail=True)
    assert counts(store, batch_id) == ("running", 3, 0, 1, 2)
    assert callbacks(store) == ["catch"]  # on the first failure

    assert store.retry_job(a.id)
    assert job(store, a.id).state == "queued"
    # back among the pending work: no longer failed, the batch still running
    assert counts(store, batch_id) == ("running", 3, 0, 0, 3)

    run(store, b, fail=False)
    run(store, c, fail=False)
    run(store, a, fail=False)  # the retry
    record = batch(store, batch_id)
    assert (record.state, record.done, record.failed, record.pending) == ("succeeded", 3, 0, 0)
    assert record.progress == 1.0
    assert callbacks(store) == ["catch", "finally", "then"]  # each once; no second catch


@pytest.mark.batches_across_queues
def test_a_retried_member_that_fails_again_is_counted_once(store: Store) -> None:
    a, b = members(2)
    batch_id = make_batch(store, [a, b], allow_failures=True)
    run(store, a, fail=True)
    assert store.retry_job(a.id)
    run(store, b, fail=False)
    assert counts(store, batch_id) == ("running", 2, 1, 0, 1)
    run(store, a, fail=True)
    record = batch(store, batch_id)  # one failure for one member, not two
    assert (record.state, record.done, record.failed, record.jobs) == ("succeeded", 1, 1, 2)
    assert callbacks(store) == ["catch", "finally", "then"]  # catch once, whatever happens next


@pytest.mark.batches_across_queues
def test_a_retried_members_own_progress_counts_again(store: Store) -> None:
    """Its share was a whole settled member while failed; retried, it is open work again, with
    the progress it had reported (kept across retries, as for any member)."""
    a, b = members(2)
    batch_id = make_batch(store, [a, b], allow_failures=True)
    run(store, a, fail=True, progress=0.5)
    assert batch(store, batch_id).progress == 0.5  # 1 settled of 2
    assert store.retry_job(a.id)
    assert batch(store, batch_id).progress == 0.25  # 0.5 of one member, of 2
    run(store, b, fail=False)
    assert batch(store, batch_id).progress == 0.75
    run(store, a, fail=False)
    assert batch(store, batch_id).progress == 1.0


@pytest.mark.batches_across_queues
def test_a_member_of_a_failed_batch_is_not_retried(store: Store) -> None:
    """Without allow_failures the first failure failed the batch: catch ran, the queued members
    were cancelled. A retry cannot undo that, so it is refused and nothing changes."""
    a, b, c = members(3)
    batch_id = make_batch(store, [a, b, c], allow_failures=False)
    r = reserve_one(store, queues=[a.queue])
    run(store, b, fail=True)  # b fails while a still runs
    before = counts(store, batch_id)
    assert before == ("failed", 3, 0, 1, 1)  # c was cancelled; a still runs
    assert job(store, c.id).state == "cancelled"

    assert not store.retry_job(b.id)
    assert job(store, b.id).state == "failed" and counts(store, batch_id) == before
    assert store.end_attempt(Ending(job_id=a.id, token=r.token))[
        0
    ].accepted  # the batch then settles
    assert not store.retry_job(b.id)
    assert counts(store, batch_id) == ("failed", 3, 1, 1, 0)
    assert callbacks(store) == ["catch", "finally"]


@pytest.mark.batches_across_queues
def test_a_member_of_a_settled_batch_is_not_retried(store: Store) -> None:
    """allow_failures: the batch succeeded with a failure and sent then/finally; retrying the
    failed member would leave those callbacks describing work that is running again."""
    a, b = members(2)
    batch_id = make_batch(store, [a, b], allow_failures=True)
    run(store, a, fail=True)
    run(store, b, fail=False)
    settled = batch(store, batch_id)
    assert (settled.state, settled.done, settled.failed) == ("succeeded", 1, 1)
    assert not store.retry_job(a.id)
    assert job(store, a.id).state == "failed"
    assert batch(store, batch_id) == settled
    assert store.reserve(queues=[a.queue, b.queue], worker=W1, lease=30) == []


@pytest.mark.batches_across_queues
def test_a_member_of_a_cancelled_batch_is_not_retried(store: Store) -> None:
    a, b = members(2)
    batch_id = make_batch(store, [a, b], allow_failures=True)
    run(store, a, fail=True)
    assert store.cancel(batch_id=batch_id).accepted
    assert not store.retry_job(a.id)
    assert job(store, a.id).state == "failed"
    assert batch(store, batch_id).state == "cancelled"


def test_a_job_outside_any_batch_still_retries(store: Store) -> None:
    (lone,) = members(1)
    store.enqueue_many([lone])
    run(store, lone, fail=True)
    assert store.retry_job(lone.id)
    assert job(store, lone.id).state == "queued"
    assert not store.retry_job(lone.id)  # not failed any more


@pytest.mark.batches_across_queues
def test_tenure_failed_retry_says_why_a_member_stays_failed(store: Store, store_url: str) -> None:
    """The person retrying learns what happened and what to do, not just "not retried"."""
    a, b = members(2)
    batch_id = make_batch(store, [a, b], allow_failures=False)
    run(store, a, fail=True)
    app = tenure.App(store_url)
    try:
        assert not app.retry_failed(a.id)
        why = app.retry_refusal(a.id)
    finally:
        app.close()
    assert f"member of batch {batch_id} ('exports'), which has failed" in why
    assert "start a new batch" in why
    shown = subprocess.run(
        [sys.executable, "-m", "tenure", "failed", "retry", a.id, "--url", store_url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert shown.returncode == 1
    assert why in " ".join(shown.stderr.split()), shown.stderr
    assert job(store, a.id).state == "failed"

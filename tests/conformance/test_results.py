"""Job results: a job's JSON return value is stored with its success, in the same store call
that records it, and only while its token holds the lease; the same size limit as payloads;
sealed at rest when the job is encrypted; None stores nothing."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator

import pytest

import tenure
from backends.kit import Kit
from conformance.helpers import W1, W2, enqueue, expire_and_rescue, job, new_job, reserve_one
from tenure.core import payload
from tenure.core.records import Ending
from tenure.stores import Store
from tenure.testing import drain


@pytest.fixture
def app(store_url: str, store: Store) -> Iterator[tenure.App]:
    application = tenure.App(store_url, max_payload_bytes=2_000)

    @application.job(name="total", tries=2, backoff=0)
    def total(order_id: int) -> dict[str, int]:
        return {"order": order_id, "total": order_id * 10}

    @application.job(name="nothing", backoff=0)
    def nothing() -> None:
        return None

    @application.job(name="huge", tries=3, backoff=0)
    def huge() -> str:
        return "x" * 5_000

    @application.job(name="not_json", tries=3, backoff=0)
    def not_json() -> object:
        return {1, 2}

    @application.job(name="secret", encrypted=True, backoff=0)
    def secret() -> str:
        return "card 4242"

    try:
        yield application
    finally:
        application.close()


def test_the_result_is_stored_with_the_success(store: Store) -> None:
    (first,) = enqueue(store, new_job())
    held = reserve_one(store)
    ended = store.end_attempt(Ending(job_id=first, token=held.token, result='{"total":420}'))[0]
    assert ended.accepted
    record = job(store, first)
    assert record.state == "succeeded"
    assert record.result_text == '{"total":420}' and record.result == {"total": 420}


def test_complete_and_reserve_stores_the_result_and_claims_the_next(store: Store) -> None:
    first, second = enqueue(store, new_job(), new_job())
    held = reserve_one(store)
    ended, following = store.end_attempt(
        Ending(job_id=first, token=held.token, result="[1,2]"),
        queues=["default"],
        worker=W1,
        lease=30,
    )
    assert ended.accepted and following is not None and following.job_id == second
    assert job(store, first).result == [1, 2]
    assert job(store, second).result_text is None


def test_a_stale_tokens_result_is_refused(store: Store) -> None:
    (only,) = enqueue(store, new_job())
    stale = reserve_one(store, lease=1)
    expire_and_rescue(store, only)
    fresh = reserve_one(store, worker=W2)
    late = store.end_attempt(
        Ending(job_id=only, token=stale.token, result='"from the stale attempt"')
    )[0]
    assert not late.accepted
    assert job(store, only).result_text is None
    ended, _ = store.end_attempt(
        Ending(job_id=only, token=stale.token, result='"late"'),
        queues=["default"],
        worker=W1,
        lease=30,
    )
    assert not ended.accepted and job(store, only).result_text is None
    assert store.end_attempt(Ending(job_id=only, token=fresh.token, result='"fresh"'))[0].accepted
    assert job(store, only).result == "fresh"


def test_a_job_transaction_stores_the_result_in_its_commit(store: Store) -> None:
    if not store.capabilities.job_transactions:
        pytest.skip("this store has no job transactions (see test_job_transactions)")
    (only,) = enqueue(store, new_job())
    held = reserve_one(store)
    tx = store.job_transaction(job_id=only, token=held.token)
    assert tx.complete('{"rows":3}').accepted
    assert job(store, only).result == {"rows": 3}


def test_a_jobs_return_value_is_its_result(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(42)
    (done,) = drain(app)
    assert done.state == "succeeded" and done.result == {"order": 42, "total": 420}
    assert app.get_job(handle.id).result == {"order": 42, "total": 420}
    assert app.get_job(handle.id).result_text == '{"order":42,"total":420}'


def test_none_stores_nothing(app: tenure.App, kit: Kit) -> None:
    handle = app.jobs["nothing"].dispatch()
    drain(app)
    record = app.get_job(handle.id)
    assert record.state == "succeeded" and record.result is None
    assert kit.stored_job_field(handle.id, "result") is None


@pytest.mark.parametrize(
    ("name", "reason"),
    [("huge", "over the 2,000-byte limit"), ("not_json", "cannot be stored as JSON")],
)
def test_a_result_that_cannot_be_stored_fails_the_job_clearly(
    app: tenure.App, kit: Kit, name: str, reason: str
) -> None:
    handle = app.jobs[name].dispatch()
    (done,) = drain(app)
    # not retried: the job would only return the same value again; never a cut value
    assert done.state == "failed" and len(done.attempts) == 1
    assert done.attempts[0].outcome == "failed"
    error = done.attempts[0].error or ""
    assert f"the return value of job '{name}'" in error and reason in error
    assert kit.stored_job_field(handle.id, "result") is None


def test_an_encrypted_jobs_result_is_sealed_at_rest(
    app: tenure.App, kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cryptography")
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    monkeypatch.setenv(payload.ENCRYPTION_KEY_ENV, key)
    handle = app.jobs["secret"].dispatch()
    drain(app)
    stored = kit.stored_job_field(handle.id, "result")
    assert stored is not None and payload.is_encrypted(stored) and "4242" not in stored
    assert app.get_job(handle.id).result == "card 4242"

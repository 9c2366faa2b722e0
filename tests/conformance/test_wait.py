"""JobHandle.wait: the result once the job succeeded, JobFailed / JobCancelled when it ended
otherwise, TimeoutError when it did not end in time; woken by the store's own signal when the
end is recorded (here by the store verbs a worker uses, from another thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tenure
from conformance.helpers import W1, wait_until
from tenure.core.records import Ending
from tenure.stores import Store


@pytest.fixture
def app(store_url: str, store: Store) -> Iterator[tenure.App]:
    application = tenure.App(store_url)

    @application.job(name="total", tries=1)
    def total(n: int) -> int:
        return n * 10

    try:
        yield application
    finally:
        application.close()


class Sleeping:
    """Counts the waiter's calls to wait_for_work (the real one runs), so a test can end the
    job while the waiter sleeps in the store's wake-up rather than before it looked."""

    def __init__(self, store: Store) -> None:
        self.calls = 0
        self._real: Callable[..., None] = store.wait_for_work

        def counted(**kwargs: Any) -> None:
            self.calls += 1
            self._real(**kwargs)

        store.wait_for_work = counted  # type: ignore[method-assign]


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            out["value"] = call()
        except BaseException as exc:
            out["error"] = exc
        out["took"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def succeed(store: Store, result: str | None) -> float:
    (held,) = store.reserve(queues=["default"], worker=W1, lease=30)
    ended, _ = store.end_attempt(Ending(job_id=held.job_id, token=held.token, result=result))
    assert ended.accepted
    return time.monotonic()


def test_wait_returns_the_result_once_the_job_succeeds(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(4)
    waiter_app = tenure.App(app.url)
    try:
        sleeping = Sleeping(waiter_app.store)
        waiting = tenure.JobHandle(handle.id, handle.name, waiter_app)
        thread, out = in_thread(lambda: waiting.wait(timeout=30))
        wait_until(lambda: sleeping.calls >= 2, what="the waiter to sleep on the store")
        succeed(app.store, "40")
        thread.join(30)
    finally:
        waiter_app.close()
    assert out.get("value") == 40, out
    assert out["took"] < 30


def test_wait_async_returns_the_result(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(5)

    async def main() -> Any:
        waiting = asyncio.create_task(handle.wait_async(timeout=30))
        await asyncio.sleep(0)  # the task starts before the end is recorded
        await asyncio.to_thread(succeed, app.store, "50")
        return await waiting

    assert asyncio.run(main()) == 50


def test_a_failed_job_raises_job_failed_with_its_last_error(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(6)
    thread, out = in_thread(lambda: handle.wait(timeout=30))
    (held,) = app.store.reserve(queues=["default"], worker=W1, lease=30)
    app.store.end_attempt(
        Ending(
            job_id=held.job_id, token=held.token, outcome="failed", error="ValueError: bad row 6"
        )
    )
    thread.join(30)
    error = out.get("error")
    assert isinstance(error, tenure.JobFailed), out
    assert error.job_id == handle.id and "ValueError: bad row 6" in (error.error or "")
    assert "ValueError: bad row 6" in str(error)


def test_a_cancelled_job_raises_job_cancelled(app: tenure.App) -> None:
    batch = app.batch([app.jobs["total"].sig(1)], name="to cancel")
    assert app.cancel_batch(batch.id)
    (member,) = [j for j in app.list_jobs() if j.batch_id == batch.id]
    with pytest.raises(tenure.JobCancelled):
        tenure.JobHandle(member.id, member.name, app).wait(timeout=30)


def test_a_job_that_does_not_end_in_time_raises_timeout_error(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(7)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not end within 0.3 s; it is queued"):
        handle.wait(timeout=0.3)
    assert time.monotonic() - started >= 0.3


def test_a_result_of_none_is_returned_as_none(app: tenure.App) -> None:
    handle = app.jobs["total"].dispatch(8)
    succeed(app.store, None)
    assert handle.wait(timeout=5) is None

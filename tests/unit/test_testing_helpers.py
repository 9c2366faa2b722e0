"""tenure.testing, used the way a user's own tests use it (through the pytest plugin)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest

import tenure
from tenure.core import causes
from tenure.core.records import WorkerRecord
from tenure.testing import (
    FrozenClock,
    assert_dispatched,
    assert_not_dispatched,
    drain,
    inline,
)


def test_drain_runs_jobs_through_the_store(tenure_app: tenure.App) -> None:
    seen: list[int] = []

    @tenure_app.job(tries=2, backoff=0)
    def record(n: int) -> None:
        if tenure.current().attempt == 1 and n == 2:
            raise RuntimeError("first try fails")
        seen.append(n)

    handles = record.dispatch_many([(1,), (2,)])
    assert_dispatched(record, args=(1,))
    assert_dispatched(record, count=2)
    assert_not_dispatched(record, args=(3,))
    ended = drain(tenure_app)
    assert sorted(seen) == [1, 2]
    assert len(ended) == 3  # 1 once; 2 failed, was requeued with no backoff, then succeeded
    assert [tenure_app.get_job(h.id).state for h in handles] == ["succeeded", "succeeded"]
    info = tenure_app.get_job(handles[1].id)
    assert [a.outcome for a in info.attempts] == ["failed", "succeeded"]


def test_inline_mode_runs_at_dispatch_and_keeps_the_json_round_trip(
    tenure_app: tenure.App,
) -> None:
    got: list[object] = []

    @tenure_app.job
    def take(value: object) -> None:
        got.append(value)

    with inline(tenure_app):
        take.dispatch((1, 2))
        assert got == [[1, 2]]  # the tuple became a list, as it would in production
        with pytest.raises(tenure.PayloadError):
            take.dispatch({1, 2})


def test_drain_and_inline_expose_results_as_a_worker_stores_them(tenure_app: tenure.App) -> None:
    @tenure_app.job
    def total(n: int) -> dict[str, object]:
        return {"n": n, "pair": (n, n)}

    handle = total.dispatch(3)
    (done,) = drain(tenure_app)
    assert done.result == {"n": 3, "pair": [3, 3]}  # through JSON, as on a worker
    assert tenure_app.get_job(handle.id).result == done.result
    with inline(tenure_app):
        again = total.dispatch(4)
        assert tenure_app.get_job(again.id).result == {"n": 4, "pair": [4, 4]}


def test_drain_and_inline_run_chains(tenure_app: tenure.App) -> None:
    @tenure_app.job
    def double(n: int) -> int:
        return n * 2

    handle = tenure_app.chain([double.sig(1), double.sig(), double.sig()], pass_result=True)
    assert [j.result for j in drain(tenure_app)] == [2, 4, 8]
    assert handle.wait(timeout=5) == 8
    with inline(tenure_app):
        again = tenure_app.chain([double.sig(5), double.sig()], pass_result=True)
        assert again.wait(timeout=0) == 20  # already run, link after link, at dispatch


def test_frozen_clock_steps_through_delays_and_backoff(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    calls: list[int] = []

    @tenure_app.job(tries=3, backoff=60)
    def flaky() -> None:
        calls.append(tenure.current().attempt)
        if len(calls) == 1:
            raise RuntimeError("boom")

    later = flaky.options(delay=30).dispatch()
    assert drain(tenure_app) == []
    assert tenure_app.get_job(later.id).state == "scheduled"
    tenure_clock.advance(31)
    drain(tenure_app)
    assert tenure_app.get_job(later.id).state == "scheduled"  # backing off 60 s
    tenure_clock.advance(61)
    drain(tenure_app)
    assert tenure_app.get_job(later.id).state == "succeeded" and calls == [1, 2]


def test_the_frozen_clock_stamps_the_worker_registry_too(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    record = WorkerRecord("w-frozen", "host", 1, ("default",), 1, 0.0, 0.0)
    tenure_app.store.heartbeat(worker=record)
    tenure_clock.advance(5)
    tenure_app.store.heartbeat(worker=replace(record, stopped_at=0.0))
    (seen,) = tenure_app.workers()
    assert (seen.started_at, seen.stopped_at) == (tenure_clock.now - 5, tenure_clock.now)


def test_failed_assertions_say_what_was_dispatched(tenure_app: tenure.App) -> None:
    @tenure_app.job
    def ping(host: str) -> None: ...

    ping.dispatch("a")
    with pytest.raises(AssertionError, match=r"dispatches: \(\('a',\), \{\}\)"):
        assert_dispatched(ping, args=("b",))
    with pytest.raises(AssertionError, match="was dispatched"):
        assert_not_dispatched(ping)


def test_drain_commits_a_transactional_jobs_writes_with_its_success(
    tenure_app: tenure.App,
) -> None:
    path = tenure_app.url.removeprefix("sqlite:///")
    tenure_app.counts()  # the store's schema first, then the application's table beside it
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE shipped (order_id INTEGER NOT NULL)")

    @tenure_app.job(transactional=True, tries=1)
    def ship(order_id: int) -> None:
        tenure.current().transaction().execute(
            "INSERT INTO shipped (order_id) VALUES (?)", (order_id,)
        )
        if order_id == 2:
            raise RuntimeError("the carrier refused it")

    ok, bad = ship.dispatch(1), ship.dispatch(2)
    drain(tenure_app)

    assert tenure_app.get_job(ok.id).state == "succeeded"
    assert tenure_app.get_job(bad.id).state == "failed"
    with sqlite3.connect(path) as conn:  # the failed job's row was rolled back with it
        assert [r[0] for r in conn.execute("SELECT order_id FROM shipped")] == [1]


def test_drain_records_each_attempts_cause_as_a_worker_does(tenure_app: tenure.App) -> None:
    """The same history as on a worker (tests/e2e/test_causes_e2e.py): an exception's cause is
    `exception`, an overrun timeout's `timeout`; a success, a snooze, none."""

    @tenure_app.job(name="raises", tries=1)
    def raises() -> None:
        raise ValueError("row 7 is bad")

    @tenure_app.job(name="overruns", tries=1, timeout=0.01)
    def overruns() -> None:
        time.sleep(0.05)  # the job's own work, past its timeout (not enforced in the test)

    @tenure_app.job(name="snoozes")
    def snoozes() -> None:
        raise tenure.Snooze(60)

    @tenure_app.job(name="works")
    def works() -> int:
        return 1

    ids = [j.dispatch().id for j in (raises, overruns, snoozes, works)]
    drain(tenure_app)
    ended = {
        tenure_app.get_job(i).name: [(a.outcome, a.cause) for a in tenure_app.get_job(i).attempts]
        for i in ids
    }
    assert ended == {
        "raises": [("failed", causes.EXCEPTION)],
        "overruns": [("timed_out", causes.TIMEOUT)],
        "snoozes": [("deferred", None)],
        "works": [("succeeded", None)],
    }


def test_drain_fails_a_job_no_code_here_defines_naming_the_cause(tmp_path: Path) -> None:
    """As a worker run with --unknown-grace 0 does: failed for good, cause `unknown_job`."""
    url = f"sqlite:///{tmp_path / 'unknown.db'}"
    newer, older = tenure.App(url), tenure.App(url)
    newer.job(name="report")(lambda: None)
    job_id = newer.jobs["report"].dispatch().id
    drain(older, queues=["default"])
    (attempt,) = older.get_job(job_id).attempts
    assert (attempt.outcome, attempt.cause) == ("failed", causes.UNKNOWN_JOB)
    assert "unknown job 'report'" in (attempt.error or "")
    newer.close()
    older.close()

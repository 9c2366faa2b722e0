"""Per-dispatch options a Celery, RQ or Sidekiq user reaches for: `options(at=datetime)`
(Celery eta, RQ enqueue_at, Sidekiq perform_at) and this dispatch's `tries=` / `timeout=`,
on a real SQLite store; bad values refused at dispatch with "expected X, got Y"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import tenure
from tenure.core.errors import ConfigError
from tenure.testing import drain


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    the_app = tenure.App(f"sqlite:///{tmp_path / 'o.db'}")

    @the_app.job(name="report", tries=3, timeout=60)
    def report(n: int) -> int:
        return n

    @the_app.job(name="flaky", tries=5)
    def flaky() -> None:
        raise RuntimeError("down")

    return the_app


def test_at_runs_the_job_at_that_time(app: tenure.App) -> None:
    report = app.jobs["report"]
    when = datetime.now(ZoneInfo("Europe/Rome")) + timedelta(hours=2)
    handle = report.options(at=when).dispatch(1)
    record = app.get_job(handle.id)
    assert record.state == "scheduled"
    assert abs(record.run_at - when.timestamp()) < 2  # the store's clock, this host's
    past = report.options(at=datetime.now(UTC) - timedelta(days=1)).dispatch(2)
    assert app.get_job(past.id).state == "queued"  # a time gone by runs now
    assert [j.id for j in drain(app)] == [past.id]
    app.close()


@pytest.mark.parametrize(
    ("at", "message"),
    [
        (datetime(2030, 1, 1, 9, 0), "expected a timezone-aware datetime, got the naive"),
        ("2030-01-01T09:00:00Z", "at: expected a datetime, got str"),
        (1893488400.0, "at: expected a datetime, got float"),
    ],
)
def test_at_refuses_what_is_not_an_aware_datetime(
    app: tenure.App, at: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        app.jobs["report"].options(at=at).dispatch(1)  # type: ignore[arg-type]
    assert app.counts()["queued"] == 0  # nothing stored
    app.close()


def test_at_and_delay_together_are_refused(app: tenure.App) -> None:
    with pytest.raises(ConfigError, match="at= and delay= both given"):
        app.jobs["report"].options(at=datetime.now(UTC), delay=5)
    app.close()


def test_tries_and_timeout_for_one_dispatch(app: tenure.App) -> None:
    flaky = app.jobs["flaky"]
    once = flaky.options(tries=1, timeout=5).dispatch()
    usual = flaky.dispatch()
    record = app.get_job(once.id)
    assert (record.policy.tries, record.policy.timeout) == (1, 5.0)
    assert app.get_job(usual.id).policy.tries == 5  # the job's own, untouched
    drain(app, max_jobs=1)
    failed = app.get_job(once.id)
    assert failed.state == "failed" and "used all 1 tries" in (failed.last_error or "")
    app.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tries": 0}, "tries: expected an int >= 1 or None"),
        ({"tries": "3"}, "tries: expected an int, got '3'"),
        ({"timeout": -1}, "timeout: expected seconds > 0, got -1"),
        ({"timeout": "60"}, "timeout: expected seconds > 0, got '60'"),
        ({"tries": None}, "tries=None \\(unlimited\\) needs retry_until="),
    ],
)
def test_bad_tries_or_timeout_are_refused(
    app: tenure.App, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        app.jobs["report"].options(**options)  # type: ignore[arg-type]
    app.close()

"""Periodic jobs through the real SQLite store on a clock the test owns: definition checks,
the first due time recorded, each due time dispatched once however many tickers look, only the
latest missed run after downtime (none with catch_up="none"), and daylight-saving nights."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

import tenure
from tenure.core.errors import ConfigError
from tenure.periodic import LATE_AFTER_S, RETRY_AFTER_S, PeriodicTicker, run_id
from tenure.stores.sqlite import sqlite_path
from tenure.testing import FrozenClock, drain

ROME = ZoneInfo("Europe/Rome")


def at(text: str, zone: ZoneInfo = ROME) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def runs(app: tenure.App, name: str) -> list[float]:
    """The due times dispatched for `name`, from the runs' ids, oldest first."""
    return sorted(j.created_at for j in app.list_jobs(limit=10_000) if j.name == name)


def test_a_periodic_job_must_take_no_arguments(tenure_app: tenure.App) -> None:
    with pytest.raises(ConfigError, match=r"called with no arguments, but it takes bill\(order_id"):

        @tenure_app.periodic("@hourly")
        def bill(order_id: int) -> None: ...

    assert "bill" not in tenure_app.jobs and not tenure_app.periodic_jobs


def test_bad_schedules_and_options_are_refused_at_definition(tenure_app: tenure.App) -> None:
    with pytest.raises(ConfigError, match="expected 5 fields"):
        tenure_app.periodic("every five minutes")
    with pytest.raises(ConfigError, match=r"expected a schedule such as @app.periodic\("):

        @tenure_app.periodic  # type: ignore[arg-type]  # the schedule forgotten
        def forgot() -> None: ...

    with pytest.raises(ConfigError, match="tz: expected an IANA time zone"):
        tenure_app.periodic("@daily", tz="Rome")
    with pytest.raises(ConfigError, match="catch_up: expected one of latest, none, got 'all'"):
        tenure_app.periodic("@daily", catch_up="all")


def test_each_due_time_is_dispatched_once_across_tickers(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    @tenure_app.periodic("*/5 * * * *", queue="reports", timeout=30)
    def refresh() -> None: ...

    assert isinstance(refresh, tenure.Job)

    assert refresh.queue == "reports"
    tenure_clock.now = at("2026-06-01T10:03:00")
    tickers = [PeriodicTicker(tenure_app) for _ in range(3)]
    outcomes = [c.outcome for t in tickers for c in t.run_once(tenure_app.now())]
    # first seen: recorded, no back-filled run; the other two read that from the store
    assert outcomes == ["recorded"]
    assert runs(tenure_app, refresh.name) == []
    for _ in range(6 * 60):  # 6 hours, a look a minute from each ticker
        tenure_clock.advance(60)
        for ticker in tickers:
            ticker.run_once(tenure_app.now())
    created = runs(tenure_app, refresh.name)
    assert len(created) == 6 * 12
    assert all(datetime.fromtimestamp(c, ROME).minute % 5 == 0 for c in created)
    job = tenure_app.get_job(run_id(refresh.name, at("2026-06-01T10:05:00")))
    assert job.queue == "reports" and job.policy.timeout == 30


def test_after_downtime_only_the_latest_missed_run_is_dispatched(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    @tenure_app.periodic("0 * * * *")
    def hourly() -> None: ...

    tenure_clock.now = at("2026-06-01T10:30:00")
    PeriodicTicker(tenure_app).run_once(tenure_app.now())
    tenure_clock.now = at("2026-06-01T15:20:00")  # five due times passed with no worker
    claimed = PeriodicTicker(tenure_app).run_once(tenure_app.now())
    assert [(c.due, c.outcome) for c in claimed] == [(at("2026-06-01T15:00:00"), "dispatched")]
    assert len(runs(tenure_app, hourly.name)) == 1


def test_catch_up_none_skips_a_late_run_and_keeps_the_next(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    @tenure_app.periodic("0 * * * *", catch_up="none")
    def hourly() -> None: ...

    tenure_clock.now = at("2026-06-01T10:30:00")
    ticker = PeriodicTicker(tenure_app)
    ticker.run_once(tenure_app.now())
    tenure_clock.now = at("2026-06-01T15:20:00")
    assert [c.outcome for c in ticker.run_once(tenure_app.now())] == ["recorded"]
    assert runs(tenure_app, hourly.name) == []
    tenure_clock.now = at("2026-06-01T16:00:00") + LATE_AFTER_S - 1  # late, within the bound
    assert [c.outcome for c in ticker.run_once(tenure_app.now())] == ["dispatched"]
    [status] = tenure_app.periodic_status()
    assert status.last_due == at("2026-06-01T16:00:00")
    assert status.last_job_id == run_id(hourly.name, at("2026-06-01T16:00:00"))
    assert status.last_state == "queued"
    assert status.next_due == at("2026-06-01T17:00:00")


@pytest.mark.parametrize(
    ("night", "expected"),
    [
        # spring forward: 02:30 does not exist; the run is at 03:00, once
        ("2026-03-29", ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00"]),
        # fall back: 02:30 happens twice; the run is at the first, once
        ("2026-10-25", ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00"]),
    ],
)
def test_a_daylight_saving_night_runs_once(
    tenure_app: tenure.App, tenure_clock: FrozenClock, night: str, expected: list[str]
) -> None:
    @tenure_app.periodic("30 2 * * *", tz="Europe/Rome")
    def nightly() -> None: ...

    day_before = datetime.fromisoformat(night).replace(tzinfo=ROME).timestamp() - 86_400
    tenure_clock.now = day_before
    ticker = PeriodicTicker(tenure_app)
    ticker.run_once(tenure_app.now())
    for _ in range(2 * 24 * 12):  # two days, a look every 5 minutes
        tenure_clock.advance(300)
        ticker.run_once(tenure_app.now())
    dues = sorted(
        datetime.fromtimestamp(j.created_at, ROME).isoformat()
        for j in tenure_app.list_jobs(limit=100)
    )
    # each run is dispatched at the first look after its due time (within 5 minutes)
    assert [d[:14] for d in dues] == [e[:14] for e in expected]
    assert len(dues) == len(expected)


def test_the_ticker_waits_a_second_between_rounds(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    @tenure_app.periodic("* * * * *")
    def minutely() -> None: ...

    ticker = PeriodicTicker(tenure_app)
    assert [c.outcome for c in ticker.tick(100.0)] == ["recorded"]
    tenure_clock.advance(60)
    assert ticker.tick(100.999) == []  # not a second yet, however far the store's clock went
    assert [c.outcome for c in ticker.tick(101.0)] == ["dispatched"]
    ran: list[str] = []
    minutely.fn = lambda: ran.append("ran")  # the job runs through the store as a worker would
    assert [j.state for j in drain(tenure_app)] == ["succeeded"] and ran == ["ran"]


def test_a_store_error_is_logged_and_the_round_tried_again_without_losing_a_due_time(
    tenure_app: tenure.App, tenure_clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    @tenure_app.periodic("* * * * * *")
    def every_second() -> None: ...

    start = at("2026-06-01T10:00:00")
    tenure_clock.now = start
    ticker = PeriodicTicker(tenure_app)
    ticker.tick(100.0)  # 10:00:00 recorded
    side = sqlite3.connect(sqlite_path(tenure_app.url))
    side.execute("ALTER TABLE tenure_periodic RENAME TO tenure_periodic_away")  # a broken store
    side.commit()
    tenure_clock.advance(2)
    assert ticker.tick(101.0) == []
    assert "could not claim due times (OperationalError" in caplog.text
    assert ticker.tick(101.0 + RETRY_AFTER_S - 0.5) == []  # not again so soon, however broken
    side.execute("ALTER TABLE tenure_periodic_away RENAME TO tenure_periodic")
    side.commit()
    side.close()
    tenure_clock.advance(3)
    claimed = ticker.tick(101.0 + RETRY_AFTER_S)
    assert [(c.due - start, c.outcome) for c in claimed] == [
        (float(s), "dispatched") for s in range(1, 6)
    ]


def test_a_schedule_with_seconds_loses_no_due_time_between_ticks(
    tenure_app: tenure.App, tenure_clock: FrozenClock
) -> None:
    @tenure_app.periodic("* * * * * *")
    def every_second() -> None: ...

    start = at("2026-06-01T10:00:00")
    tenure_clock.now = start + 0.5
    ticker = PeriodicTicker(tenure_app)
    ticker.run_once(tenure_app.now())  # 10:00:00 recorded
    for _ in range(24):  # a look every 2.5 s, as a busy worker's loop may manage
        tenure_clock.advance(2.5)
        ticker.run_once(tenure_app.now())
    ids = {j.id for j in tenure_app.list_jobs(limit=1000)}
    assert ids == {run_id(every_second.name, start + s) for s in range(1, 61)}
    tenure_clock.advance(300)  # five minutes without a look: only the last RECENT_S catch up
    claimed = ticker.run_once(tenure_app.now())
    assert [(c.due - start, c.outcome) for c in claimed] == [
        (float(s), "dispatched") for s in range(351, 361)
    ]
    # a worker that never looked (a restart) starts from the store's last claimed due time
    tenure_clock.advance(300)
    fresh = PeriodicTicker(tenure_app).run_once(tenure_app.now())
    assert [(c.due - start, c.outcome) for c in fresh] == [
        (float(s), "dispatched") for s in range(651, 661)
    ]

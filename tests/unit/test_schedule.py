"""Periodic schedules: cron in a time zone, around daylight-saving changes, on times the test
chooses (no wall clock involved)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tenure.core.errors import ConfigError
from tenure.core.schedule import Schedule

ROME = ZoneInfo("Europe/Rome")
NEW_YORK = ZoneInfo("America/New_York")


def at(*parts: int, tz: object = UTC) -> float:
    return datetime(*parts, tzinfo=tz).timestamp()  # type: ignore[arg-type,misc]


def dues(schedule: Schedule, start: float, n: int) -> list[datetime]:
    out, moment = [], start
    for _ in range(n):
        nxt = schedule.next_due(moment)
        assert nxt is not None
        out.append(datetime.fromtimestamp(nxt, schedule.zone()))
        moment = nxt
    return out


def test_latest_due_includes_now_and_next_due_is_strictly_after() -> None:
    every5 = Schedule.parse("*/5 * * * *")
    ten05 = at(2026, 12, 1, 10, 5)
    assert every5.latest_due(ten05) == ten05
    assert every5.latest_due(ten05 + 299.9) == ten05
    assert every5.latest_due(ten05 - 0.5) == at(2026, 12, 1, 10, 0)
    assert every5.next_due(ten05) == at(2026, 12, 1, 10, 10)
    assert every5.next_due(ten05 - 0.5) == ten05


def test_a_daily_run_in_a_skipped_hour_runs_once_at_the_change() -> None:
    """Rome springs forward at 02:00 on 2026-03-29: 02:30 does not exist that night."""
    nightly = Schedule.parse("30 2 * * *", "Europe/Rome")
    got = dues(nightly, at(2026, 3, 28, 12, 0, tz=ROME), 3)
    assert [d.strftime("%m-%d %H:%M %z") for d in got] == [
        "03-29 03:00 +0200",
        "03-30 02:30 +0200",
        "03-31 02:30 +0200",
    ]


def test_a_daily_run_in_a_repeated_hour_runs_once() -> None:
    """Rome falls back at 03:00 on 2026-10-25: 02:30 happens twice; the job runs once."""
    nightly = Schedule.parse("30 2 * * *", "Europe/Rome")
    got = dues(nightly, at(2026, 10, 24, 12, 0, tz=ROME), 3)
    assert [d.astimezone(UTC).strftime("%m-%d %H:%M") for d in got] == [
        "10-25 00:30",  # 02:30 CEST, the first of the two
        "10-26 01:30",
        "10-27 01:30",
    ]


def test_hourly_runs_every_real_hour_across_both_changes() -> None:
    hourly = Schedule.parse("@hourly", "America/New_York")
    for start in (at(2026, 3, 8, 0, 30, tz=NEW_YORK), at(2026, 11, 1, 0, 30, tz=NEW_YORK)):
        got = [d.timestamp() for d in dues(hourly, start, 5)]
        assert [b - a for a, b in itertools.pairwise(got)] == [3600.0] * 4


def test_aliases_seconds_and_intervals() -> None:
    assert Schedule.parse("@daily").expression == "0 0 * * *"
    assert Schedule.parse("@HOURLY").expression == "0 * * * *"
    assert Schedule.parse("*/10 * * * * *").shortest_interval(at(2026, 1, 1)) == 10.0
    assert Schedule.parse("0 9 * * 1-5").shortest_interval(at(2026, 1, 1)) == 86_400.0


@pytest.mark.parametrize(
    ("expression", "tz", "message"),
    [
        ("* * *", None, "expected 5 fields"),
        ("61 * * * *", None, "Bad minute"),
        ("* * * * * * *", None, "expected 5 fields"),
        ("@often", None, "expected 5 fields"),
        ("0 0 * * *", "Mars/Olympus", "tz: expected an IANA time zone"),
    ],
)
def test_a_bad_schedule_says_what_was_expected(
    expression: str, tz: str | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Schedule.parse(expression, tz)

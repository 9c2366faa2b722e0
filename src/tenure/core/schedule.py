"""When a periodic job is due: standard cron expressions in a time zone, as pure functions of
the time they are asked about (the store's clock, passed in).

Cron arithmetic is cronsim's (the evaluator Healthchecks.io runs on millions of checks: Debian
cron's rules for day-of-month/day-of-week and for daylight-saving changes, no dependencies):
a job at 02:30 on a spring-forward night runs once, at 03:00; on a fall-back night, once, at
the first 02:30.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from tenure.core.errors import ConfigError

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class Schedule:
    """`"*/5 * * * *"` (5 fields, or 6 with seconds first) or an alias such as `@hourly`, in
    the time zone `tz` (an IANA name; UTC by default)."""

    expression: str
    tz: str = "UTC"

    @classmethod
    def parse(cls, expression: str, tz: str | None = None) -> Schedule:
        schedule = cls(ALIASES.get(expression.strip().lower(), expression.strip()), tz or "UTC")
        schedule.zone()
        fields = schedule.expression.split()
        if len(fields) not in (5, 6):
            raise ConfigError(
                f"cron: expected 5 fields (minute hour day month weekday), 6 with seconds "
                f"first, or an alias such as @hourly; got {expression!r}"
            )
        try:
            CronSim(schedule.expression, datetime.now(UTC))
        except CronSimError as exc:
            raise ConfigError(f"cron: {exc} in {expression!r}") from None
        return schedule

    def zone(self) -> tzinfo:
        if self.tz.upper() == "UTC":
            return UTC
        try:
            return ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"tz: expected an IANA time zone such as 'Europe/Rome', got {self.tz!r}"
            ) from None

    def latest_due(self, now: float) -> float | None:
        """The last due time at or before `now` (epoch seconds), None if there never was one
        (an expression such as Feb 30 has no due time at all)."""
        # Due times are whole seconds. Going back from half a second past `now`'s second,
        # cronsim's first step is that second itself, so a due time equal to it counts.
        moment = datetime.fromtimestamp(math.floor(now) + 0.5, self.zone())
        for due in CronSim(self.expression, moment, reverse=True):
            return due.timestamp()
        return None

    def next_due(self, after: float) -> float | None:
        """The first due time strictly after `after`."""
        moment = datetime.fromtimestamp(after, self.zone())
        for due in CronSim(self.expression, moment):
            if due.timestamp() > after:
                return due.timestamp()
        return None

    def shortest_interval(self, start: float, samples: int = 64) -> float | None:
        """The shortest gap between consecutive due times from `start` (for the doctor: runs
        closer together than a job's timeout pile up)."""
        moment = datetime.fromtimestamp(start, self.zone())
        dues = []
        for due in CronSim(self.expression, moment):
            dues.append(due.timestamp())
            if len(dues) > samples:
                break
        gaps = [b - a for a, b in itertools.pairwise(dues)]
        return min(gaps) if gaps else None

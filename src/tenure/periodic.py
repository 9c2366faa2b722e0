"""Periodic jobs: `@app.periodic("*/5 * * * *", tz="Europe/Rome")`, dispatched by the workers
themselves, with no scheduler process and no leader.

Every worker ticks about once a second (`PeriodicTicker.tick`, from its fetch loop): for each
periodic job it computes the latest due time at or before the store's now and, when that due
time changed since its last look, asks the store to claim it (`Store.claim_periodic`). The
store holds each job's last claimed due time and moves it forward atomically with the run's
enqueue, so however many workers on however many hosts tick, each due time is dispatched once;
the run's job id is made from the name and the due time, so a claim retried after a lost reply
cannot create a second job.

After downtime only the latest missed due time is looked at, so at most one run catches up
(`catch_up="latest"`, the default); `catch_up="none"` skips a due time first looked at more
than `LATE_AFTER_S` after it. A worker also claims the due times since its last look (or since
the store's last claimed one), up to `RECENT_S` old: ticks come 1 to 2 s apart, and a schedule
with seconds must not lose the due times between two. A periodic job seen for the first time
starts at its next due time: the latest past one is recorded, not run.

Put together: a due time is dispatched when any worker looks within `RECENT_S` of it (a
worker's first look starts from the store's last claimed due time); after a longer downtime,
only the latest missed one is.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from tenure.core.errors import ConfigError
from tenure.core.records import JobRecord, PeriodicClaim, PeriodicRecord
from tenure.core.schedule import Schedule

log = logging.getLogger("tenure.periodic")

CATCH_UP = ("latest", "none")
# catch_up="none": a due time looked at first this long after it passed is skipped. Longer
# than a worker's tick (1 s) plus a short store outage; shorter than a deploy's downtime.
LATE_AFTER_S = 60.0
TICK_EVERY_S = 1.0
# Due times a worker claims besides the latest, when it looked a moment ago: those since its
# last look, up to this old (ticks come 1 to 2 s apart; a longer gap is downtime).
RECENT_S = 10.0
RETRY_AFTER_S = 5.0  # after a store error


@dataclass(frozen=True)
class PeriodicJob:
    """A job registered with `@app.periodic`: its name, queue, schedule and catch-up rule."""

    name: str
    queue: str
    schedule: Schedule
    catch_up: str = "latest"

    def due_at(self, now: float) -> tuple[float, bool] | None:
        """(the latest due time at or before `now`, whether to run it), or None if the
        schedule has never been due."""
        due = self.schedule.latest_due(now)
        if due is None:
            return None
        return due, self._runs(due, now)

    def dues(self, now: float, looked: float | None) -> list[tuple[float, bool]]:
        """The due times to claim at `now`, oldest first, each with whether to run it: the
        latest, and when this worker last looked at `looked`, the ones since then no older
        than RECENT_S. A worker ticks every 1 to 2 s, so a schedule with seconds must not lose
        the due times between two ticks; anything older is downtime, and only the latest
        runs."""
        latest = self.due_at(now)
        if latest is None:
            return []
        between: list[tuple[float, bool]] = []
        if looked is not None:
            due = self.schedule.next_due(max(looked, now - RECENT_S))
            while due is not None and due < latest[0]:
                between.append((due, self._runs(due, now)))
                due = self.schedule.next_due(due)
        return [*between, latest]

    def _runs(self, due: float, now: float) -> bool:
        return self.catch_up == "latest" or now - due <= LATE_AFTER_S


def check_catch_up(value: str) -> str:
    if value not in CATCH_UP:
        raise ConfigError(f"catch_up: expected one of {', '.join(CATCH_UP)}, got {value!r}")
    return value


def run_id(name: str, due: float) -> str:
    """The job id of the run for one due time: the same on every worker, so a claim sent
    twice creates one job (16 hex digits, like every other job id)."""
    return hashlib.sha256(f"periodic\0{name}\0{due:.0f}".encode()).hexdigest()[:16]


class PeriodicApp(Protocol):
    """What the ticker uses of its `tenure.App` (a Protocol: the App imports this module)."""

    periodic_jobs: dict[str, PeriodicJob]

    def now(self) -> float: ...

    def claim_periodic(self, name: str, due: float, *, run: bool) -> PeriodicClaim: ...

    def periodic_last_dues(self) -> dict[str, float]: ...


@dataclass(frozen=True)
class Claimed:
    name: str
    due: float
    outcome: PeriodicClaim


class PeriodicTicker:
    """One per worker. `tick(now)` from a loop that turns about once a second, with the
    loop's monotonic time; `run_once(now)` does one round at a given store time (tests drive
    both with times they choose, and wait for nothing)."""

    def __init__(self, app: PeriodicApp) -> None:
        self.app = app
        self.next_tick = 0.0  # monotonic time of the next round (the worker looks first)
        self._looked: dict[str, float] = {}  # name -> the due time last claimed

    def tick(self, now: float) -> list[Claimed]:
        """A round if one is due at `now` (monotonic seconds, as the fetch loop read them), at
        most once per TICK_EVERY_S; a store error is logged and the round tried again after
        RETRY_AFTER_S (due times that came meanwhile are still recent). The due times are
        measured on the store's clock, read by the round itself."""
        if not self.app.periodic_jobs or now < self.next_tick:
            return []
        self.next_tick = now + TICK_EVERY_S
        try:
            return self.run_once(self.app.now())
        except Exception as exc:
            # An outage: look again in a few seconds, not every second (the fetch loop logs
            # the outage too), still soon enough for RECENT_S to cover what came meanwhile.
            self.next_tick = now + RETRY_AFTER_S
            log.warning(
                "periodic jobs: could not claim due times (%s: %s); trying again in %g s",
                type(exc).__name__,
                exc,
                RETRY_AFTER_S,
            )
            return []

    def run_once(self, now: float) -> list[Claimed]:
        out: list[Claimed] = []
        if any(name not in self._looked for name in self.app.periodic_jobs):
            # A worker's first look starts from the store's last claimed due time, so due
            # times that came while every worker was starting (a deploy, a crash loop) are
            # still claimed when they are recent.
            for name, due in self.app.periodic_last_dues().items():
                if name in self.app.periodic_jobs and name not in self._looked:
                    self._looked[name] = due
                    log.debug("periodic job %s: last claimed for %s", name, due_text(due))
        for name, job in self.app.periodic_jobs.items():
            looked = self._looked.get(name)
            for due, run in job.dues(now, looked):
                if looked is not None and due <= looked:
                    continue  # claimed by this worker already (or by another, seen so)
                outcome = self.app.claim_periodic(name, due, run=run)
                self._looked[name] = due
                out.append(Claimed(name, due, outcome))
                self._log(name, due, run, outcome)
        return out

    @staticmethod
    def _log(name: str, due: float, run: bool, outcome: PeriodicClaim) -> None:
        when = due_text(due)
        if outcome == "dispatched":
            log.info("periodic job %s dispatched for %s", name, when)
        elif outcome == "recorded" and run:
            log.info("periodic job %s first seen at %s: it runs from its next due time", name, when)
        elif outcome == "recorded":
            log.info("periodic job %s: %s skipped, too late (catch_up='none')", name, when)
        else:  # every worker but one says this at every due time: not worth more than DEBUG
            log.debug("periodic job %s: %s already claimed by another worker", name, when)


@dataclass(frozen=True)
class PeriodicStatus:
    """A periodic job as `tenure periodic list` and the dashboard show it."""

    name: str
    expression: str
    tz: str
    queue: str
    catch_up: str
    next_due: float | None
    last_due: float | None  # the latest due time claimed (run or skipped)
    last_job_id: str | None  # the latest run
    last_state: str | None  # that run's state; None if there was none or it is gone
    last_run_at: float | None  # when that run was dispatched


def status(
    job: PeriodicJob, record: PeriodicRecord | None, last: JobRecord | None, now: float
) -> PeriodicStatus:
    return PeriodicStatus(
        name=job.name,
        expression=job.schedule.expression,
        tz=job.schedule.tz,
        queue=job.queue,
        catch_up=job.catch_up,
        next_due=job.schedule.next_due(now),
        last_due=record.last_due if record else None,
        last_job_id=record.last_job_id if record else None,
        last_state=last.state if last else None,
        last_run_at=last.created_at if last else None,
    )


def zone_text(epoch: float, tz: str) -> str:
    """'2026-06-01 10:05:00 CEST': a time as people of the schedule's zone read it."""
    zone = Schedule("* * * * *", tz).zone()
    return datetime.fromtimestamp(epoch, zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def due_text(due: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(due))

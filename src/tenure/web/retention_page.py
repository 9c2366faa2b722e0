"""The dashboard's retention view: how long finished jobs are kept (the App's keep_succeeded
and keep_failed, and every job that sets its own), and what is past its age right now, counted
the way `tenure prune --dry-run` counts it (nothing is deleted).

The store keeps no record of pruning runs: every worker prunes on its own, leaderless, and logs
what it deleted. A count of rows past their age that stays high, or grows from one visit to the
next, says no worker is pruning (none running) or pruning is behind."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tenure.core.retention import AppDefault

DAY_S = 86_400.0


@dataclass(frozen=True)
class KeepRow:
    """A job whose code sets its own retention: the figures it ends up with."""

    job: str
    queue: str
    succeeded: float | None
    failed: float | None
    sets: tuple[str, ...]  # which of keep_succeeded / keep_failed the job itself sets


@dataclass(frozen=True)
class RetentionView:
    succeeded: float | None  # the App's; None keeps forever
    failed: float | None
    overrides: list[KeepRow] = field(default_factory=list)
    due: dict[str, int] = field(default_factory=dict)  # past their age now, per kind
    counted_at: float = 0.0
    count_error: str | None = None


def retention_view(app: Any) -> RetentionView:
    rows = []
    for name in sorted(app.jobs):
        job = app.jobs[name]
        own = job.keep
        sets = tuple(
            setting
            for setting, value in (("keep_succeeded", own.succeeded), ("keep_failed", own.failed))
            if not isinstance(value, AppDefault)
        )
        if sets:
            keep = own.over(app.keep)
            rows.append(KeepRow(name, job.queue, keep.succeeded, keep.failed, sets))
    due: dict[str, int] = {}
    error = None
    started = time.time()
    try:
        due = app.prune(dry_run=True).kinds()
    except Exception as exc:  # a page, not a crash: say why the count is missing
        error = f"{type(exc).__name__}: {exc}"
    return RetentionView(app.keep.succeeded, app.keep.failed, rows, due, started, error)


def keep_text(seconds: float | None) -> str:
    """A retention as a person says it: "forever", "14 days", "1 h", "30 s"."""
    if seconds is None:
        return "forever"
    for unit, size in (("day", DAY_S), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    if seconds >= DAY_S:
        return f"{seconds / DAY_S:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds:g} s"


def view_json(view: RetentionView) -> dict[str, Any]:
    return {
        "keep_succeeded": view.succeeded,
        "keep_failed": view.failed,
        "overrides": [
            {
                "job": r.job,
                "queue": r.queue,
                "keep_succeeded": r.succeeded,
                "keep_failed": r.failed,
                "sets": list(r.sets),
            }
            for r in view.overrides
        ],
        "due": view.due,
        "counted_at": view.counted_at,
        "count_error": view.count_error,
        "last_prune": None,  # not recorded by the store: workers log each prune
    }

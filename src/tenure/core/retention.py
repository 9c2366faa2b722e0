"""Retention: how long finished jobs and settled batches are kept, and the pruning that deletes
them once they are older, measured on the store's clock.

Each job carries its retention from dispatch (`Keep`, written with the job), so every worker
prunes it alike whichever jobs its own App defines: a worker that does not know a job's
`keep_succeeded=` override cannot delete it early. A succeeded job is kept `succeeded`
seconds after it finished; a failed or cancelled one `failed` seconds (both are jobs a person
may want to look into). A batch member is pruned only once its batch has settled, and a
settled batch after its own age. The latest run of each periodic job is never pruned
(`tenure periodic list` shows its outcome), nor is a job that has not finished.

Workers prune as part of their rescue tick (`Store.sweep`): one bounded chunk per tick, a
short transaction (or one Lua script) each, so SQLite's single writer keeps serving
reservations between chunks. `tenure prune` runs chunks until nothing is due.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from tenure.core.errors import ConfigError

DEFAULT_KEEP_SUCCEEDED = timedelta(days=1)
DEFAULT_KEEP_FAILED = timedelta(days=14)
# Rows deleted per chunk (jobs, batches, guard rows each): one short transaction or script.
PRUNE_CHUNK = 500
# Between two chunks the pruner leaves the store alone for as long as the last chunk took
# (at least PRUNE_PAUSE_MIN_S): SQLite's waiting writers retry on a back-off, and back to
# back chunks kept a reservation waiting 430 ms where a pause keeps it under 70 ms.
PRUNE_PAUSE_MIN_S = 0.005
# `tenure prune` stops after this many chunks, so a store that keeps finishing jobs faster
# than they are deleted cannot keep the command running forever.
PRUNE_MAX_CHUNKS = 100_000


@dataclass(frozen=True)
class Keep:
    """How long a job (or a batch) is kept once finished, in seconds; None keeps it forever."""

    succeeded: float | None = None
    failed: float | None = None  # failed and cancelled

    def for_state(self, state: str) -> float | None:
        return self.succeeded if state == "succeeded" else self.failed


KEEP_FOREVER = Keep()


class AppDefault:
    """A job's retention when `@app.job` / `.options()` does not set it: the App's."""

    def __repr__(self) -> str:
        return "APP_DEFAULT"


APP_DEFAULT = AppDefault()
KeepSetting = timedelta | float | None | AppDefault


@dataclass(frozen=True)
class KeepOverride:
    """`keep_succeeded=` / `keep_failed=` of one job or one dispatch, over the App's."""

    succeeded: float | AppDefault | None = APP_DEFAULT
    failed: float | AppDefault | None = APP_DEFAULT

    def over(self, base: Keep) -> Keep:
        return Keep(
            base.succeeded if isinstance(self.succeeded, AppDefault) else self.succeeded,
            base.failed if isinstance(self.failed, AppDefault) else self.failed,
        )


def override_of(succeeded: object = APP_DEFAULT, failed: object = APP_DEFAULT) -> KeepOverride:
    def seconds(name: str, value: object) -> float | AppDefault | None:
        return value if isinstance(value, AppDefault) else keep_seconds(name, value)

    return KeepOverride(seconds("keep_succeeded", succeeded), seconds("keep_failed", failed))


def keep_seconds(name: str, value: object) -> float | None:
    """A retention setting as seconds: a timedelta, seconds >= 0, or None (forever)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ConfigError(
            f"{name}: expected a timedelta, seconds, or None (keep forever), got {value!r}"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"{name}: expected a duration >= 0, got {value!r}")
    return seconds


def keep_of(succeeded: object, failed: object) -> Keep:
    return Keep(keep_seconds("keep_succeeded", succeeded), keep_seconds("keep_failed", failed))


@dataclass(frozen=True)
class Pruned:
    """What one sweep deleted (or, dry run, would delete), per kind."""

    jobs: int = 0  # batch members included
    attempts: int = 0
    effects: int = 0  # once() records
    batches: int = 0
    guards: int = 0  # unique keys, rate-limit starts and overlap entries no longer held
    waiters: int = 0  # rows of waits for a job's end whose waiter is gone (PostgreSQL)
    more: bool = False  # a chunk was full: more may be due now

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(
            jobs=self.jobs + other.jobs,
            attempts=self.attempts + other.attempts,
            effects=self.effects + other.effects,
            batches=self.batches + other.batches,
            guards=self.guards + other.guards,
            waiters=self.waiters + other.waiters,
            more=other.more,
        )

    def kinds(self) -> dict[str, int]:
        return {
            "jobs": self.jobs,
            "attempts": self.attempts,
            "effects": self.effects,
            "batches": self.batches,
            "guards": self.guards,
            "waiters": self.waiters,
        }


class Swept(Protocol):
    @property
    def pruned(self) -> Pruned: ...


class Sweeps(Protocol):
    """The part of the Store this module uses (the stores import this module)."""

    def sweep(
        self, *, rescue: bool = True, prune: bool = True, limit: int = 500, dry_run: bool = False
    ) -> Swept: ...


def prune_all(store: Sweeps, *, dry_run: bool = False, chunk: int = PRUNE_CHUNK) -> Pruned:
    """Everything due, now (`tenure prune`): chunk after chunk until one comes back short; with
    `dry_run`, what would be deleted, and nothing is."""
    if dry_run:
        return store.sweep(rescue=False, prune=True, limit=chunk, dry_run=True).pruned
    total = Pruned()
    for _ in range(PRUNE_MAX_CHUNKS):
        started = time.monotonic()
        pruned = store.sweep(rescue=False, prune=True, limit=chunk).pruned
        total = total + pruned
        if not pruned.more:
            break
        time.sleep(pause_after(time.monotonic() - started))
    return total


def pause_after(chunk_s: float) -> float:
    """How long to leave the store to others after a chunk that took `chunk_s`."""
    return max(chunk_s, PRUNE_PAUSE_MIN_S)


__all__ = [
    "APP_DEFAULT",
    "DEFAULT_KEEP_FAILED",
    "DEFAULT_KEEP_SUCCEEDED",
    "KEEP_FOREVER",
    "PRUNE_CHUNK",
    "AppDefault",
    "Keep",
    "KeepOverride",
    "KeepSetting",
    "Pruned",
    "keep_of",
    "keep_seconds",
    "override_of",
    "pause_after",
    "prune_all",
]

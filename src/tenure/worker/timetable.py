"""When a worker does its chores, decided from the time it is told, not from a clock it reads
(huey's `loop(now)`): the fetch loop, the heartbeat and the sweeper ask `due(now)` with the
monotonic time their driver read, so a test drives them through minutes in no time at all.

The clocks that measure a lease (when an attempt was claimed, when its lease was renewed) stay
real: they are facts about the store, not decisions about when to look.
"""

from __future__ import annotations

import enum


class Every:
    """A chore due every `interval` seconds, first at `first_at` (0: at the first look)."""

    def __init__(self, interval: float, *, first_at: float = 0.0) -> None:
        self.interval = interval
        self.next_at = first_at

    def due(self, now: float) -> bool:
        """True when the chore is due at `now`; then it is next due an interval later."""
        if now < self.next_at:
            return False
        self.next_at = now + self.interval
        return True


class Deadline:
    """`--max-time`: reached `limit` seconds after the first look (None: never)."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.started: float | None = None

    def reached(self, now: float) -> bool:
        if self.started is None:
            self.started = now
        return self.limit is not None and now - self.started >= self.limit


class Then(enum.Enum):
    """What the fetch loop does after one pass (Worker.fetch_once); the waits are its
    driver's, so that a pass itself never sleeps."""

    AGAIN = "again"  # it reserved jobs: look again at once
    WAIT_FOR_SLOT = "wait for a free slot"  # every slot is busy
    WAIT_FOR_WORK = "wait for work"  # nothing to reserve: the store's wait (LISTEN, BLPOP...)
    BACK_OFF = "back off"  # the store failed: wait before the next try
    STOP = "stop"  # the worker stops (asked to, --max-time, --max-jobs, --burst, refused)

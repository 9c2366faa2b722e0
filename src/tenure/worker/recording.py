"""Recording how an attempt ended, and saying so in the log: the same for the child (which
records what its jobs did) and the supervisor (which records what only it can see: a child
that died, a hard timeout, a stop that handed the attempt back).

Every end is fenced by the attempt's token: an end whose lease was taken over is refused.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from tenure.core.errors import ConfigError, StoreMisconfigured
from tenure.core.records import Ending, EndResult, Reservation, WorkerRef
from tenure.logs import log_end as log_end
from tenure.stores.base import Store
from tenure.worker.execute import Ended

log = logging.getLogger("tenure.worker")

T = TypeVar("T")

STORE_RETRY_MAX_S = 5.0
# Store errors retrying cannot fix: a refused connection, a bad URL, a schema too new.
REFUSALS = (StoreMisconfigured, ConfigError)


def store_attempts(lease: float) -> int:
    """Keep retrying an end about as long as the lease lasts; after that it is rescued."""
    return max(3, int(lease / STORE_RETRY_MAX_S) + 2)


def back_off(failures: int) -> float:
    """The wait after the store failed `failures` times in a row: doubling, at most
    STORE_RETRY_MAX_S."""
    return min(STORE_RETRY_MAX_S, 0.2 * 2.0**failures)


class Outage:
    """The fetch loop's count of the store's failures in a row, and the back-off they earn:
    each failure is said once, with the wait it brings; a call that works ends the outage."""

    def __init__(self) -> None:
        self.failures = 0

    def failed(self, what: str, exc: Exception) -> None:
        self.failures += 1
        log.warning(
            "store unavailable during %s (%s: %s); retrying in %.1f s",
            what, type(exc).__name__, exc, self.delay(),
        )  # fmt: skip

    def delay(self) -> float:
        return back_off(self.failures)

    def over(self) -> None:
        self.failures = 0


def retrying(
    call: Callable[[], T],
    *,
    attempts: int,
    interrupt: threading.Event,
    refused: Callable[[Exception], None],
) -> T | None:
    """Retry a store call through a short outage, backing off; None after `attempts`
    failures, once `interrupt` is set, or when the store refuses for good (`refused`)."""
    failures = 0
    while True:
        try:
            return call()
        except REFUSALS as exc:
            refused(exc)
            return None
        except Exception as exc:
            failures += 1
            if failures >= attempts or interrupt.is_set():
                log.error("store call failed %d times: %s", failures, exc)
                return None
            delay = back_off(failures)
            log.warning(
                "store unavailable (%s: %s); retrying in %.1f s", type(exc).__name__, exc, delay
            )
            if interrupt.wait(delay):  # a stop request ends the wait at once
                log.info("store call given up: the worker is stopping (%s)", exc)
                return None


class Recorder:
    """Ends attempts in one store for one worker."""

    def __init__(
        self,
        store: Store,
        worker: WorkerRef,
        *,
        lease: float,
        interrupt: threading.Event,
        refused: Callable[[Exception], None],
    ) -> None:
        self.store = store
        self.worker = worker
        self.lease = lease
        self.attempts = store_attempts(lease)
        self.interrupt = interrupt
        self.refused = refused

    def _call(self, call: Callable[[], T]) -> T | None:
        return retrying(
            call, attempts=self.attempts, interrupt=self.interrupt, refused=self.refused
        )

    def end(self, res: Reservation, ended: Ended) -> EndResult | None:
        """Record the end; None when the store could not be reached (the lease will expire
        and the job will be rescued)."""
        if ended.recorded is not None:
            return ended.recorded
        return self._call(lambda: self.store.end_attempt(ended.ending(res.job_id, res.token))[0])

    def succeed_and_claim(
        self, res: Reservation, ended: Ended, queues: Sequence[str]
    ) -> tuple[EndResult | None, Reservation | None]:
        """Record a success (with its result) and claim the slot's next job in one store
        call."""
        try:
            return self.store.end_attempt(
                Ending(job_id=res.job_id, token=res.token, result=ended.result),
                queues=queues,
                worker=self.worker,
                lease=self.lease,
            )
        except Exception:
            # Recording the end matters; the next job can wait for the fetch loop. (Had the
            # failed call committed, the success recorded again is refused by fencing and any
            # job it claimed is rescued when its lease expires, as after a lost reply to
            # `reserve`.)
            return self.end(res, ended), None

"""How a worker stops: why, how long its running attempts may go on, what a handed-back attempt
records, and the exit status.

A stop request (SIGTERM, Ctrl-C, `tenure restart`, --max-jobs, a store that refuses the worker)
ends reserving at once; running attempts get --grace seconds (or all the time they need), then
are handed back. A second SIGTERM or Ctrl-C hands them back at once. Every wait in the worker
waits on `requested` or `hard`, so none of them outlasts a stop request.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("tenure.worker")

# Exit status of a worker whose store refused it for a reason retrying cannot fix (bad URL,
# password, database) or whose SQLite file went away: a process manager restarting it in a
# loop cannot help, and a person should read the log.
EXIT_STORE_REFUSED = 2


class Shutdown:
    def __init__(
        self, worker_id: str, grace: float, running: Callable[[], int], wake: Callable[[], None]
    ) -> None:
        self.worker_id = worker_id
        self.grace = grace
        self.requested = threading.Event()  # stop reserving
        self.hard = threading.Event()  # stop running attempts now and hand them back
        self.reason = ""
        self.hard_reason = ""
        self.exit_code = 0
        self._running = running
        self._wake = wake
        self._since = 0.0
        self._lock = threading.RLock()  # re-entrant: a signal handler may interrupt a holder

    def request(self, reason: str, *, grace: float | None) -> None:
        """Stop reserving; after `grace` s (None: when running jobs end) hand the rest back."""
        with self._lock:
            if not self.requested.is_set():
                self.reason = reason
                self._since = time.monotonic()
                self.requested.set()
                self._announce(reason, grace)
                if grace is not None:
                    timer = threading.Timer(
                        grace,
                        self.hand_back,
                        (f"the worker was stopping ({reason}) and the attempt outlived --grace "
                         f"{grace:g} s",),
                    )  # fmt: skip
                    timer.daemon = True
                    timer.start()
        self._wake()

    def _announce(self, reason: str, grace: float | None) -> None:
        running = self._running()
        if not running:
            log.info("worker %s stopping: %s", self.worker_id, reason)
        elif grace is None:
            log.info(
                "worker %s stopping (%s): %d running job(s) finish first",
                self.worker_id,
                reason,
                running,
            )
        else:
            log.info(
                "worker %s stopping (%s): waiting up to --grace %g s for %d running job(s) "
                "to finish, then handing them back; a second Ctrl-C or SIGTERM hands them "
                "back now",
                self.worker_id,
                reason,
                grace,
                running,
            )

    def hand_back(self, reason: str) -> None:
        """Stop every running attempt now; `reason` is what each of them records."""
        with self._lock:
            if self.hard.is_set():
                return
            self.hard_reason = reason
            self.hard.set()
        self._wake()

    def refused(self, why: str, reason: str) -> None:
        """The store refused the worker for good: log `why` in full, stop for `reason` (short),
        and exit with EXIT_STORE_REFUSED."""
        self.exit_code = EXIT_STORE_REFUSED
        log.error("worker %s: %s", self.worker_id, why)
        self.request(f"{reason}; exit status {EXIT_STORE_REFUSED}", grace=self.grace)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if not self.requested.is_set():
            self.request(f"{name} received", grace=self.grace)
            return
        if self.hard.is_set():
            return
        waited = time.monotonic() - self._since
        log.warning("second %s: handing running jobs back now", name)
        # Says what happened: not "outlived --grace" when a person cut the grace short.
        self.hand_back(
            f"the worker was stopping ({self.reason}) and a second {name}, {waited:.1f} s "
            "later, stopped the attempt at once"
        )

"""The watchdog's pulse: a timestamp the supervisor's lease guard writes ten times a second
into a page its children share, so that a child knows, before it records an end and claims
its next job on its own, that its supervisor is there to renew that job's lease and watch it.

A child whose supervisor has stopped (SIGSTOP, a debugger, a machine too loaded to run it)
records nothing and claims nothing itself: it hands the end to the supervisor and waits, as
a child did before children recorded their own ends, so that a late result is fenced.
"""

from __future__ import annotations

import struct
import time

from tenure.worker.shared_page import SharedPage

SIZE = 8
# A pulse older than this: the supervisor is not watching. Longer than any ordinary delay
# of its guard thread (every 0.1 s); a false alarm costs one job a slower path, nothing else.
STALE_S = 0.3


class Pulse:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd

    @classmethod
    def create(cls) -> Pulse:
        """The supervisor's side, shared with every child."""
        pulse = cls(SharedPage.create(SIZE))
        pulse.beat()
        return pulse

    @classmethod
    def attach(cls, fd: int) -> Pulse:
        """A child's side, from the descriptor it was given."""
        return cls(SharedPage(fd, SIZE))

    def beat(self) -> None:
        struct.pack_into("d", self._page.map, 0, time.monotonic())

    def fresh(self) -> bool:
        """The supervisor's guard ran within STALE_S (CLOCK_MONOTONIC is one per host)."""
        (last,) = struct.unpack_from("d", self._page.map, 0)
        return bool(time.monotonic() - last < STALE_S)

    def close(self) -> None:
        self._page.close()

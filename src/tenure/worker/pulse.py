"""The watchdog's pulse: a timestamp the supervisor's lease guard writes ten times a second
into a page its children share, so that a child knows, before it records an end and claims
its next job on its own, that its supervisor is there to renew that job's lease and watch it.

A child whose supervisor has stopped (SIGSTOP, a debugger, a machine too loaded to run it)
records nothing and claims nothing itself: it hands the end to the supervisor and waits, as
a child did before children recorded their own ends, so that a late result is fenced.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
import time

SIZE = 8
# A pulse older than this: the supervisor is not watching. Longer than any ordinary delay
# of its guard thread (every 0.1 s); a false alarm costs one job a slower path, nothing else.
STALE_S = 0.3


class Pulse:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, SIZE)

    @classmethod
    def create(cls) -> Pulse:
        """A new page, unlinked at once (its descriptor is all the children get)."""
        fd, path = tempfile.mkstemp(prefix="tenure-pulse-")
        os.unlink(path)
        os.ftruncate(fd, SIZE)
        pulse = cls(fd)
        pulse.beat()
        return pulse

    def beat(self) -> None:
        struct.pack_into("d", self._map, 0, time.monotonic())

    def fresh(self) -> bool:
        """The supervisor's guard ran within STALE_S (CLOCK_MONOTONIC is one per host)."""
        (last,) = struct.unpack_from("d", self._map, 0)
        return bool(time.monotonic() - last < STALE_S)

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)

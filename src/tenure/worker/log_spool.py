"""A child's log lines about its successes, gathered in a page of memory it shares with its
supervisor and written out together (issue 35).

A busy child ends thousands of attempts a second and writes one line for each: a write and a
flush per job. The lines are written here instead (a copy into memory) and go out in one
write when the child is idle, when the oldest waited FLUSH_S (the child's flusher thread
looks every FLUSH_S, so a long job does not hold back the lines of the ones before it), when
the page is full, and before any other line (so the log keeps its order). The page is
shared so that no line is lost when the child is killed (a hard timeout, the memory cap, the
kernel's OOM killer): the supervisor writes what the dead child left, before its own line
about the death. A child killed between its write and marking the page empty leaves lines
the supervisor writes again: a line twice, never a line lost.
"""

from __future__ import annotations

import os
import struct
import threading
import time

from tenure.worker.shared_page import SharedPage

SIZE = 64 * 1024
_USED = struct.Struct("<Q")  # offset 0: bytes of lines waiting, from DATA
DATA = 8
CAPACITY = SIZE - DATA
FLUSH_S = 0.05


class LogSpool:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd
        self._used = 0
        self.since = 0.0  # monotonic time of the oldest line waiting
        self.out: int | None = None  # the child's log descriptor
        self._lock = threading.Lock()  # the job's thread adds, the flusher thread writes

    @classmethod
    def create(cls) -> LogSpool:
        """The supervisor's side, for one child."""
        return cls(SharedPage.create(SIZE))

    @classmethod
    def attach(cls, fd: int, out: int | None) -> LogSpool:
        """The child's side: lines go to descriptor `out` (its log handler's stream)."""
        spool = cls(SharedPage(fd, SIZE))
        spool.out = out
        return spool

    # -- the child's side ---------------------------------------------------------------
    def add(self, line: str) -> None:
        data = line.encode()
        size = len(data)
        with self._lock:
            used = self._used
            if used + size > CAPACITY:
                self._flush()
                if size > CAPACITY:
                    _write_all(self.out, data)
                    return
                used = 0
            if not used:
                self.since = time.monotonic()
            page = self._page.map
            page[DATA + used : DATA + used + size] = data
            self._used = used = used + size
            _USED.pack_into(page, 0, used)

    def due(self, now: float) -> bool:
        return self._used > 0 and now - self.since >= FLUSH_S

    def flush(self) -> None:
        if self._used:
            with self._lock:
                self._flush()

    def _flush(self) -> None:
        if self._used:
            _write_all(self.out, self._page.map[DATA : DATA + self._used])
            self._used = 0
            _USED.pack_into(self._page.map, 0, 0)

    # -- the supervisor's side ----------------------------------------------------------
    def drain(self, out: int) -> None:
        """Write what a dead child left (its writes are over) to descriptor `out`."""
        page = self._page.map
        (used,) = _USED.unpack_from(page, 0)
        if 0 < used <= CAPACITY:
            _write_all(out, page[DATA : DATA + used])
        _USED.pack_into(page, 0, 0)

    def close(self) -> None:
        self._page.close()


def _write_all(fd: int | None, data: bytes) -> None:
    if fd is None:
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]

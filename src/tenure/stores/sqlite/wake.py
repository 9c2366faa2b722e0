"""Waking an idle SQLite worker when another process commits: inotify on the database's -wal
file (every commit in WAL mode writes it), so the wake-up comes within a fraction of a
millisecond instead of at the next poll. Linux only; elsewhere, and when inotify is not
available (a limit reached, no -wal file), the caller polls as before.

The event is a hint: the caller still compares PRAGMA data_version, which changes only when
another connection committed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select

IN_MODIFY = 0x00000002
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


class FileWatch:
    """An inotify descriptor on one file; `wait(timeout)` is True when the file was written
    since the last wait."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: str) -> FileWatch | None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):  # not Linux
            return None
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, os.fsencode(path), IN_MODIFY) < 0:  # no such file
            os.close(fd)
            return None
        return cls(fd)

    def wait(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return False
        self.clear()
        return True

    def clear(self) -> None:
        """Forget the events so far (they are read, not kept)."""
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.fd, 65536):
                pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

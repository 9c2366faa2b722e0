"""A page of memory a supervisor shares with one or all of its child processes: a temporary
file unlinked at once and mapped by both sides, so its descriptor, passed to the child, is all
there is of it (nothing is left on disk, whatever kills whom)."""

from __future__ import annotations

import mmap
import os
import tempfile


class SharedPage:
    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.map = mmap.mmap(fd, size)

    @classmethod
    def create(cls, size: int) -> SharedPage:
        fd, path = tempfile.mkstemp(prefix="tenure-page-")
        os.unlink(path)
        os.ftruncate(fd, size)
        return cls(fd, size)

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)

"""Which attempt a cancel is for: a small page the supervisor shares with one child process.

The supervisor writes the attempt (its job id's digest and its fencing token) here *before* it
sends the cancel signal, and the child's handler acts only when the mark names the attempt it
is running. A busy child runs job after job without waiting for its supervisor, so a signal
meant for the attempt it just finished could otherwise land in the next one and cancel a job
nobody cancelled.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import tempfile

LAYOUT = "q8s"  # token, then the first 8 bytes of blake2b(job id)
SIZE = struct.calcsize(LAYOUT)


def _digest(job_id: str) -> bytes:
    return hashlib.blake2b(job_id.encode(), digest_size=8).digest()


class CancelMark:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, SIZE)

    @classmethod
    def create(cls) -> CancelMark:
        """A new page, unlinked at once (its descriptor is all the child gets)."""
        fd, path = tempfile.mkstemp(prefix="tenure-cancel-")
        os.unlink(path)
        os.ftruncate(fd, SIZE)
        return cls(fd)

    def mark(self, job_id: str, token: int) -> None:
        struct.pack_into(LAYOUT, self._map, 0, token, _digest(job_id))

    def names(self, job_id: str, token: int) -> bool:
        marked_token, digest = struct.unpack_from(LAYOUT, self._map, 0)
        return bool(marked_token == token and digest == _digest(job_id))

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)

"""Which attempt a cancel is for: a small page the supervisor shares with one child process.

The supervisor writes the attempt (its job id's digest and its fencing token) here *before* it
sends the cancel signal, and the child's handler acts only when the mark names the attempt it
is running. A busy child runs job after job without waiting for its supervisor, so a signal
meant for the attempt it just finished could otherwise land in the next one and cancel a job
nobody cancelled.
"""

from __future__ import annotations

import hashlib
import struct

from tenure.worker.shared_page import SharedPage

LAYOUT = "q8s"  # token, then the first 8 bytes of blake2b(job id)
SIZE = struct.calcsize(LAYOUT)


def _digest(job_id: str) -> bytes:
    return hashlib.blake2b(job_id.encode(), digest_size=8).digest()


class CancelMark:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd

    @classmethod
    def create(cls) -> CancelMark:
        """The supervisor's side, for one child."""
        return cls(SharedPage.create(SIZE))

    @classmethod
    def attach(cls, fd: int) -> CancelMark:
        """The child's side, from the descriptor it was given."""
        return cls(SharedPage(fd, SIZE))

    def mark(self, job_id: str, token: int) -> None:
        struct.pack_into(LAYOUT, self._page.map, 0, token, _digest(job_id))

    def names(self, job_id: str, token: int) -> bool:
        marked_token, digest = struct.unpack_from(LAYOUT, self._page.map, 0)
        return bool(marked_token == token and digest == _digest(job_id))

    def close(self) -> None:
        self._page.close()

"""Which attempt a child holds, in a page of memory it shares with its supervisor (issue 35).

A busy child records each end and claims its next job in one store call, then runs that job
at once. The watchdog must know that attempt (its clocks, its lease, and the `crashed` end of
an attempt a dead child held), but it needs to know it only when it looks: on its tick, when
the child dies, before it kills. So the child writes the attempt here, where writing costs a
copy into memory, instead of sending a message down the pipe for every job (a JSON line, a
write, a wake-up of the supervisor); the supervisor reads the page when it looks.

The child writes the attempt *before* it runs it, as it wrote the start message before, so a
child that dies in a job has named it; memory that both processes map outlives the writer.
An empty record: the child holds no attempt (idle, or its attempt was handed over).

The record is guarded by a sequence number, odd while a write is under way, and a CRC of its
bytes: a reader that meets a write half done (the child was preempted, or killed, in the
middle of one; or the reader's CPU saw the stores in another order) reads nothing new, never
a torn attempt. A child killed in the middle of a write has claimed an attempt it could not
name; that attempt is rescued when its lease expires, as one whose start message a child
died before writing always was.
"""

from __future__ import annotations

import struct
import zlib

from tenure.core.records import Reservation
from tenure.worker.messages import Started
from tenure.worker.shared_page import SharedPage

SIZE = 4096
_SEQ = struct.Struct("<Q")  # offset 0: even when the record is whole
_META = struct.Struct("<II")  # offset 8: CRC-32 of the body, its length
_NUMBERS = struct.Struct("<qqddd?")  # attempt, token, timeout, kill_after, claimed_at, batch?
BODY = 16
CAPACITY = SIZE - BODY
READ_TRIES = 50


class AttemptSlot:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd
        self._seq = _SEQ.unpack_from(page.map, 0)[0]

    @classmethod
    def create(cls) -> AttemptSlot:
        """The supervisor's side, for one child: empty (sequence 0)."""
        return cls(SharedPage.create(SIZE))

    @classmethod
    def attach(cls, fd: int) -> AttemptSlot:
        """The child's side, from the descriptor it was given."""
        return cls(SharedPage(fd, SIZE))

    # -- the child's side ---------------------------------------------------------------
    def hold(self, res: Reservation, claimed_at: float) -> bool:
        """Name `res` as the attempt the child runs next; False if it does not fit the page
        (names of several KB, or a NUL in one): the caller says it down the pipe instead."""
        text = "\0".join((res.job_id, res.name, res.queue, res.batch_id or ""))
        body = (
            _NUMBERS.pack(
                res.attempt,
                res.token,
                res.policy.timeout,
                res.policy.kill_after,
                claimed_at,
                res.batch_id is not None,
            )
            + text.encode()
        )
        if len(body) > CAPACITY or text.count("\0") != 3:
            self._write(b"")  # the page names no attempt rather than the one that ended
            return False
        self._write(body)
        return True

    def empty(self) -> None:
        """The child holds no attempt."""
        self._write(b"")

    def _write(self, body: bytes) -> None:
        page = self._page.map
        seq = self._seq + 1
        _SEQ.pack_into(page, 0, seq)  # odd: a write is under way
        page[BODY : BODY + len(body)] = body
        _META.pack_into(page, 8, zlib.crc32(body), len(body))
        self._seq = seq + 1
        _SEQ.pack_into(page, 0, self._seq)

    # -- the supervisor's side ----------------------------------------------------------
    def read(self) -> tuple[int, Started | None] | None:
        """(sequence, the attempt held or None); None when no whole record could be read
        (a write under way, or one its writer died in)."""
        page = self._page.map
        for _ in range(READ_TRIES):
            (seq,) = _SEQ.unpack_from(page, 0)
            if seq & 1:
                continue
            crc, length = _META.unpack_from(page, 8)
            body = bytes(page[BODY : BODY + min(length, CAPACITY)])
            if _SEQ.unpack_from(page, 0)[0] != seq or zlib.crc32(body) != crc:
                continue
            return seq, _started(body) if body else None
        return None

    def close(self) -> None:
        self._page.close()


def _started(body: bytes) -> Started:
    attempt, token, timeout, kill_after, claimed_at, batch = _NUMBERS.unpack_from(body)
    job_id, name, queue, batch_id = body[_NUMBERS.size :].decode().split("\0")
    return Started(
        job_id, name, queue, attempt, token, batch_id if batch else None, timeout, kill_after,
        claimed_at,
    )  # fmt: skip

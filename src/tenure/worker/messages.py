"""What the supervisor and its children say to each other over their pipes: typed messages
(one NamedTuple per kind), and their wire form, encoded and decoded here and nowhere else.

Supervisor -> child: `Run`, the first attempt of an idle slot (the supervisor reserved it);
with `chain` the child claims its next jobs itself.

Child -> supervisor, one-way (the child never waits for an answer): `Ready` once it started;
`Tally`, the ends it recorded (name, outcome, microseconds: the worker's counts and metrics),
gathered over up to log_spool.FLUSH_S and written with its log lines; `HandOff` when the store
call that recorded an end opened an async attempt the supervisor's event loop runs, and `Idle`
when the child claimed nothing and waits for the next `Run` (`exit`: it leaves, to be
replaced). A child whose supervisor is not watching records nothing: it sends `ToRecord` (the
end, for the supervisor to record) and `Idle`. Which attempt the child runs is not a message:
the child names it in its attempt slot (below) before it runs it, so a child that
dies at once has still told the supervisor which attempt died with it. `Started` is the
watchdog's view of an attempt, read from the slot (or, for an attempt too large for the slot,
sent down the pipe before the child runs it).

The wire: one line per write, a JSON array of messages, each `[kind, field, ...]` in the order
of its NamedTuple's fields (an attempt's Reservation inlined, see `_ATTEMPT`). One write of less
than PIPE_BUF bytes is atomic, so a kill cannot leave half a line; a line the reader cannot
read raises `Garbled`, naming what is wrong with it.

Supervisor -> every child, without a word: the pulse (below). Child -> supervisor, without a
word: the attempt slot (below).
"""

from __future__ import annotations

import functools
import json
import struct
import time
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

from tenure.core.records import Reservation
from tenure.core.retry import Policy, parse_policy
from tenure.worker.shared_page import SharedPage

_new = tuple.__new__  # a NamedTuple from its fields, as its _make does, one call fewer


class Garbled(ValueError):
    """A line of the pipe that is not a message of this protocol."""


class Run(NamedTuple):
    """Supervisor -> child: run this attempt; with `chain`, claim the slot's next ones too."""

    attempt: Reservation
    chain: bool


class Ready(NamedTuple):
    """Child -> supervisor: the child started and loaded the app."""

    pid: int


class Tally(NamedTuple):
    """The child recorded the ends of these attempts, in order: [job name, outcome,
    microseconds] each. Whole microseconds: an int's text costs a fraction of a float's
    shortest repr, and a busy child writes one a job."""

    ends: list[list[Any]]


class Started(NamedTuple):
    """What the watchdog needs of an attempt the child opened: whose it is, its fencing token,
    its clocks; `claimed_at` (CLOCK_MONOTONIC, shared by the processes of one host) is taken
    before the claim, so the lease is at least that fresh."""

    job_id: str
    name: str
    queue: str
    attempt: int
    token: int
    batch_id: str | None
    timeout: float
    kill_after: float
    claimed_at: float

    @classmethod
    def of(cls, res: Reservation, claimed_at: float) -> Started:
        policy = res.policy
        return _new(cls, (
            res.job_id, res.name, res.queue, res.attempt, res.token, res.batch_id,
            policy.timeout, policy.kill_after, claimed_at,
        ))  # fmt: skip

    def reservation(self) -> Reservation:
        """The attempt as the watchdog holds it (no payload: the child has it)."""
        return Reservation(
            job_id=self.job_id,
            name=self.name,
            queue=self.queue,
            payload="",
            policy=_watched_policy(self.timeout, self.kill_after),
            attempt=self.attempt,
            token=self.token,
            lease_expires_at=0.0,
            batch_id=self.batch_id,
        )


class HandOff(NamedTuple):
    """The child claimed an async attempt: the supervisor's event loop runs it."""

    attempt: Reservation


class ToRecord(NamedTuple):
    """An end the child did not record (its supervisor was not watching): the supervisor
    records it (a late one is fenced). A success carries its stored `result`."""

    job_id: str
    token: int
    name: str
    outcome: str
    seconds: float
    error: str | None
    traceback: str | None
    permanent: bool
    result: str | None
    snooze: float
    cause: str | None


class Idle(NamedTuple):
    """The child claimed nothing and waits for the next Run; `exit`: it leaves instead."""

    exit: bool = False


Message = Run | Ready | Tally | Started | HandOff | ToRecord | Idle


@functools.lru_cache(maxsize=64)
def _watched_policy(timeout: float, kill_after: float) -> Policy:
    """The watchdog's Policy of an attempt (a frozen value): one per distinct pair, not one
    per job."""
    return Policy(timeout=timeout, kill_after=kill_after)


# -- the wire -----------------------------------------------------------------------------
# An attempt in full, for the process that will run it: these fields, in this order.
_ATTEMPT = 9


def _attempt(res: Reservation) -> list[Any]:
    return [
        res.job_id, res.name, res.queue, res.payload, res.policy.text, res.attempt, res.token,
        res.lease_expires_at, res.batch_id,
    ]  # fmt: skip


def _from_attempt(f: list[Any]) -> Reservation:
    return Reservation(f[0], f[1], f[2], f[3], parse_policy(f[4]), f[5], f[6], f[7], f[8])


_Form = tuple[str, Callable[[Any], list[Any]], Callable[[list[Any]], Any]]


def _plain(tag: str, kind: Any) -> _Form:
    """The wire form of a kind whose fields are plain values: `[tag, *fields]`."""
    size = len(kind._fields) + 1

    def write(message: Any) -> list[Any]:
        return [tag, *message]

    def read(item: list[Any]) -> Any:
        if type(item) is not list or len(item) != size:
            raise TypeError(f"{len(item) - 1} fields, not {size - 1}")
        return _new(kind, item[1:])

    return tag, write, read


def _with_attempt(tag: str, kind: Any) -> _Form:
    """The wire form of a kind whose first field is an attempt: `[tag, *attempt, *rest]`."""
    size = _ATTEMPT + len(kind._fields)

    def write(message: Any) -> list[Any]:
        return [tag, *_attempt(message[0]), *message[1:]]

    def read(item: list[Any]) -> Any:
        if type(item) is not list or len(item) != size:
            raise TypeError(f"{len(item) - 1} fields, not {size - 1}")
        return _new(kind, (_from_attempt(item[1 : _ATTEMPT + 1]), *item[_ATTEMPT + 1 :]))

    return tag, write, read


# The tags are short: a busy child writes a `Tally` every log_spool.FLUSH_S.
_FORMS: dict[Any, _Form] = {
    Run: _with_attempt("run", Run),
    Ready: _plain("ready", Ready),
    Tally: _plain("t", Tally),
    Started: _plain("s", Started),
    HandOff: _with_attempt("h", HandOff),
    ToRecord: _plain("r", ToRecord),
    Idle: _plain("i", Idle),
}
_WRITE = {kind: write for kind, (_, write, _) in _FORMS.items()}
_READ = {tag: read for tag, _, read in _FORMS.values()}


def encode(*batch: Message) -> bytes:
    """One line holding `batch`, written at once (the reader takes them in order)."""
    return (_ENCODE([_WRITE[type(message)](message) for message in batch]) + "\n").encode()


def decode(line: bytes | str) -> list[Message]:
    """The messages of one line; Garbled, with what is wrong, if it is not one this module
    wrote. The hot path (a supervisor reads a line per job its children run) checks no more
    than it must: a list of lists, each of a kind it knows, with that kind's fields."""
    try:
        items = json.loads(line)
        if type(items) is list and items:
            return [_READ[item[0]](item) for item in items]  # each reader checks its item
    except Exception:  # _fault says what, looking at the line again, slowly
        pass
    raise Garbled(_fault(line))


def _fault(line: bytes | str) -> str:
    """What is wrong with a line decode() could not read."""
    try:
        items = json.loads(line)
    except ValueError as exc:
        return f"not JSON ({exc}): {_shown(line)}"
    if not isinstance(items, list) or not items:
        return f"not a list of messages: {_shown(line)}"
    for item in items:
        if not isinstance(item, list) or not item or not isinstance(item[0], str):
            return f"a message that is not [kind, fields...]: {_shown(line)}"
        read = _READ.get(item[0])
        if read is None:
            return f"unknown message kind {item[0]!r}: {_shown(line)}"
        try:
            read(item)
        except Exception as exc:  # its number of fields; an attempt whose policy is not text
            return f"message {item[0]!r}: {exc}: {_shown(line)}"
    return f"unreadable: {_shown(line)}"


def _shown(line: bytes | str, limit: int = 200) -> str:
    text = repr(line[:limit])
    return text + ("..." if len(line) > limit else "")


# json.dumps(message, separators=(",", ":")) without building an encoder for every message
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


# -- the pulse ------------------------------------------------------------------------------
# The watchdog's pulse: a timestamp the supervisor's lease guard writes ten times a second
# into a page its children share, so that a child knows, before it records an end and claims
# its next job on its own, that its supervisor is there to renew that job's lease and watch it.
#
# A child whose supervisor has stopped (SIGSTOP, a debugger, a machine too loaded to run it)
# records nothing and claims nothing itself: it hands the end to the supervisor and waits, as
# a child did before children recorded their own ends, so that a late result is fenced.
PULSE_SIZE = 8
# A pulse older than this: the supervisor is not watching. Longer than any ordinary delay
# of its guard thread (every 0.1 s); a false alarm costs one job a slower path, nothing else.
STALE_S = 0.3
_BEAT = struct.Struct("d")  # the pulse: the supervisor's last guard, time.monotonic()


class Pulse:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd

    @classmethod
    def create(cls) -> Pulse:
        """The supervisor's side, shared with every child."""
        pulse = cls(SharedPage.create(PULSE_SIZE))
        pulse.beat()
        return pulse

    @classmethod
    def attach(cls, fd: int) -> Pulse:
        """A child's side, from the descriptor it was given."""
        return cls(SharedPage(fd, PULSE_SIZE))

    def beat(self) -> None:
        _BEAT.pack_into(self._page.map, 0, time.monotonic())

    def fresh(self, now: float | None = None) -> bool:
        """The supervisor's guard ran within STALE_S of `now` (time.monotonic(); default: read
        here; CLOCK_MONOTONIC is one per host)."""
        (last,) = _BEAT.unpack_from(self._page.map, 0)
        return bool((time.monotonic() if now is None else now) - last < STALE_S)

    def close(self) -> None:
        self._page.close()


# -- the attempt slot -----------------------------------------------------------------------
# Which attempt a child holds, in a page of memory it shares with its supervisor (issue 35).
#
# A busy child records each end and claims its next job in one store call, then runs that job
# at once. The watchdog must know that attempt (its clocks, its lease, and the `crashed` end of
# an attempt a dead child held), but it needs to know it only when it looks: on its tick, when
# the child dies, before it kills. So the child writes the attempt here, where writing costs a
# copy into memory, instead of sending a message down the pipe for every job (a JSON line, a
# write, a wake-up of the supervisor); the supervisor reads the page when it looks.
#
# The child writes the attempt *before* it runs it, as it wrote the start message before, so a
# child that dies in a job has named it; memory that both processes map outlives the writer.
# An empty record: the child holds no attempt (idle, or its attempt was handed over).
#
# The record is guarded by a sequence number, odd while a write is under way, and a CRC of its
# bytes: a reader that meets a write half done (the child was preempted, or killed, in the
# middle of one; or the reader's CPU saw the stores in another order) reads nothing new, never
# a torn attempt. A child killed in the middle of a write has claimed an attempt it could not
# name; that attempt is rescued when its lease expires, as one whose start message a child
# died before writing always was.
SLOT_SIZE = 4096
_SEQ = struct.Struct("<Q")  # offset 0: even when the record is whole
_META = struct.Struct("<II")  # offset 8: CRC-32 of the body, its length
_NUMBERS = struct.Struct("<qqddd?")  # attempt, token, timeout, kill_after, claimed_at, batch?
_BODY = 16
SLOT_CAPACITY = SLOT_SIZE - _BODY
_READ_TRIES = 50


class AttemptSlot:
    def __init__(self, page: SharedPage) -> None:
        self._page = page
        self.fd = page.fd
        self._seq = _SEQ.unpack_from(page.map, 0)[0]

    @classmethod
    def create(cls) -> AttemptSlot:
        """The supervisor's side, for one child: empty (sequence 0)."""
        return cls(SharedPage.create(SLOT_SIZE))

    @classmethod
    def attach(cls, fd: int) -> AttemptSlot:
        """The child's side, from the descriptor it was given."""
        return cls(SharedPage(fd, SLOT_SIZE))

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
        if len(body) > SLOT_CAPACITY or text.count("\0") != 3:
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
        page[_BODY : _BODY + len(body)] = body
        _META.pack_into(page, 8, zlib.crc32(body), len(body))
        self._seq = seq + 1
        _SEQ.pack_into(page, 0, self._seq)

    # -- the supervisor's side ----------------------------------------------------------
    def read(self) -> tuple[int, Started | None] | None:
        """(sequence, the attempt held or None); None when no whole record could be read
        (a write under way, or one its writer died in)."""
        page = self._page.map
        for _ in range(_READ_TRIES):
            (seq,) = _SEQ.unpack_from(page, 0)
            if seq & 1:
                continue
            crc, length = _META.unpack_from(page, 8)
            body = bytes(page[_BODY : _BODY + min(length, SLOT_CAPACITY)])
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

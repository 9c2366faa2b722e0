"""What the supervisor and its children say to each other: one JSON object per line.

Supervisor -> child: {"run": <attempt>, "chain": bool}, the first attempt of an idle slot (the
supervisor reserved it); with "chain" the child claims its next jobs itself.

Child -> supervisor, one-way (the child never waits for an answer), one line per attempt:
{"ended": [job_id, token, name, outcome, seconds]} when the child recorded an attempt's end,
with "started": <attempt summary> when the same store call opened its next attempt, "handoff":
<attempt> when that attempt is an async job the supervisor's event loop runs, and "idle": true
when the child claimed nothing and waits for the next "run" ("exit": true: it leaves, to be
replaced). The child writes "started" before it runs the attempt, so a child that dies at once
has still told the supervisor which attempt died with it (a pipe keeps what was written).

Supervisor -> every child, without a word: the pulse (below).
"""

from __future__ import annotations

import functools
import json
import struct
import time
from typing import Any

from tenure.core.records import Reservation
from tenure.core.retry import Policy, parse_policy
from tenure.worker.shared_page import SharedPage


def attempt(res: Reservation) -> dict[str, Any]:
    """An attempt in full, for the process that will run it."""
    return {
        "job_id": res.job_id,
        "name": res.name,
        "queue": res.queue,
        "payload": res.payload,
        "policy": res.policy.text,
        "attempt": res.attempt,
        "token": res.token,
        "lease_expires_at": res.lease_expires_at,
        "batch_id": res.batch_id,
    }


def from_attempt(data: dict[str, Any]) -> Reservation:
    return Reservation(
        job_id=data["job_id"],
        name=data["name"],
        queue=data["queue"],
        payload=data["payload"],
        policy=parse_policy(data["policy"]),
        attempt=data["attempt"],
        token=data["token"],
        lease_expires_at=data["lease_expires_at"],
        batch_id=data["batch_id"],
    )


def started(res: Reservation, claimed_at: float) -> list[Any]:
    """What the watchdog needs of an attempt the child opened: whose it is, its fencing token,
    its clocks; `claimed_at` (CLOCK_MONOTONIC, shared by the processes of one host) is taken
    before the claim, so the lease is at least that fresh."""
    return [
        res.job_id,
        res.name,
        res.queue,
        res.attempt,
        res.token,
        res.batch_id,
        res.policy.timeout,
        res.policy.kill_after,
        claimed_at,
    ]


@functools.lru_cache(maxsize=64)
def _watched_policy(timeout: float, kill_after: float) -> Policy:
    """The watchdog's Policy of an attempt (a frozen value): one per distinct pair, not one
    per job."""
    return Policy(timeout=timeout, kill_after=kill_after)


def from_started(fields: list[Any]) -> tuple[Reservation, float]:
    job_id, name, queue, number, token, batch_id, timeout, kill_after, claimed_at = fields
    res = Reservation(
        job_id=job_id,
        name=name,
        queue=queue,
        payload="",  # the child has it; the watchdog only watches
        policy=_watched_policy(timeout, kill_after),
        attempt=number,
        token=token,
        lease_expires_at=0.0,
        batch_id=batch_id,
    )
    return res, claimed_at


def encode(message: dict[str, Any]) -> bytes:
    return (_ENCODE(message) + "\n").encode()


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
        struct.pack_into("d", self._page.map, 0, time.monotonic())

    def fresh(self) -> bool:
        """The supervisor's guard ran within STALE_S (CLOCK_MONOTONIC is one per host)."""
        (last,) = struct.unpack_from("d", self._page.map, 0)
        return bool(time.monotonic() - last < STALE_S)

    def close(self) -> None:
        self._page.close()

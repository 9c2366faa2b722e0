"""The attempt slot a worker's child names its attempt in (worker/messages.py): the
watchdog reads back what the child wrote, never a record half written, and an attempt too
large for the page is refused so that the child says it down the pipe instead."""

from __future__ import annotations

import struct
from dataclasses import replace

from tenure.core.records import Reservation
from tenure.core.retry import Policy
from tenure.worker.messages import AttemptSlot, Started

ATTEMPT = Reservation(
    job_id="4f1c0d2e9a8b7c6d",
    name="send_email",
    queue="mail",
    payload="[]",
    policy=Policy(timeout=12.5, kill_after=3.0),
    attempt=2,
    token=2,
    lease_expires_at=0.0,
    batch_id="b-1",
)


def pair() -> tuple[AttemptSlot, AttemptSlot]:
    supervisor = AttemptSlot.create()
    return supervisor, AttemptSlot.attach(supervisor.fd)


def test_the_watchdog_reads_the_attempt_the_child_named() -> None:
    supervisor, child = pair()
    assert supervisor.read() == (0, None)  # a new slot names nothing
    assert child.hold(ATTEMPT, 123.5)
    assert supervisor.read() == (2, Started.of(ATTEMPT, 123.5))
    assert Started.of(ATTEMPT, 123.5).reservation().policy.timeout == 12.5
    unbatched = replace(ATTEMPT, batch_id=None, job_id="x", name="é" * 10)
    assert child.hold(unbatched, 1.0)
    assert supervisor.read() == (4, Started.of(unbatched, 1.0))
    child.empty()
    assert supervisor.read() == (6, None)


def test_a_record_half_written_is_not_read() -> None:
    supervisor, child = pair()
    assert child.hold(ATTEMPT, 1.0)
    page = supervisor._page.map
    struct.pack_into("<Q", page, 0, 3)  # a write under way (or its writer died in it)
    assert supervisor.read() is None
    struct.pack_into("<Q", page, 0, 2)
    assert supervisor.read() is not None
    page[20] ^= 0xFF  # the bytes changed under the sequence (another CPU's order of stores)
    assert supervisor.read() is None


def test_an_attempt_too_large_for_the_page_is_refused_and_the_slot_names_none() -> None:
    supervisor, child = pair()
    assert child.hold(ATTEMPT, 1.0)
    assert not child.hold(replace(ATTEMPT, name="n" * 5000), 2.0)
    assert supervisor.read() == (4, None)  # not the attempt that ended
    assert not child.hold(replace(ATTEMPT, queue="a\0b"), 2.0)  # the separator in a name

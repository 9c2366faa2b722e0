"""The worker's pipe protocol: every message kind survives its wire form, a write of several
is read back in order, and a line that is not a message is refused with a reason."""

from __future__ import annotations

from typing import get_args

import pytest

from tenure.core.records import Reservation
from tenure.core.retry import Policy
from tenure.worker import messages
from tenure.worker.messages import (
    Garbled,
    HandOff,
    Idle,
    Ready,
    Run,
    Started,
    Tally,
    ToRecord,
)

ATTEMPT = Reservation(
    job_id="01J0000000000000000000000A",
    name="send_email",
    queue="mail",
    payload='{"args":["x@example.com"],"kwargs":{"é":1}}',
    policy=Policy(timeout=12.5, kill_after=3.0, tries=7),
    attempt=2,
    token=41,
    lease_expires_at=1_765_000_000.25,
    batch_id="b-1",
)

EXAMPLES: list[messages.Message] = [
    Run(ATTEMPT, True),
    Run(ATTEMPT, False),
    Ready(4242),
    Tally([["send_email", "succeeded", 1200], ["report", "failed", 1_500_000]]),
    Started.of(ATTEMPT, 123.5),
    HandOff(ATTEMPT),
    ToRecord("j1", 7, "send_email", "failed", 1.5, "boom", "Traceback...", True, None, 0.0, None),
    ToRecord("j2", 8, "report", "succeeded", 0.1, None, None, False, '{"ok":1}', 0.0, None),
    Idle(),
    Idle(exit=True),
]


def test_every_kind_is_in_the_examples() -> None:
    assert {type(m) for m in EXAMPLES} == set(get_args(messages.Message))


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_a_message_reads_back_as_it_was_written(message: messages.Message) -> None:
    line = messages.encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert messages.decode(line) == [message]
    assert messages.decode(line.decode()) == [message]  # text or bytes


def test_a_run_carries_the_attempt_in_full() -> None:
    [run] = messages.decode(messages.encode(Run(ATTEMPT, True)))
    assert isinstance(run, Run)
    assert run.attempt == ATTEMPT
    assert run.attempt.policy.tries == 7 and run.attempt.policy.kill_after == 3.0


def test_a_start_gives_the_watchdog_what_it_watches() -> None:
    [started] = messages.decode(messages.encode(Started.of(ATTEMPT, 123.5)))
    assert isinstance(started, Started) and started.claimed_at == 123.5
    watched = started.reservation()
    assert (watched.job_id, watched.token, watched.attempt) == ("01J0000000000000000000000A", 41, 2)
    assert (watched.policy.timeout, watched.policy.kill_after) == (12.5, 3.0)
    assert watched.batch_id == "b-1" and watched.payload == ""


def test_one_write_of_several_messages_reads_back_in_order() -> None:
    said: list[messages.Message] = [
        Tally([["a", "succeeded", 500_000]]),
        Started.of(ATTEMPT, 9.0),
        Idle(),
    ]
    line = messages.encode(*said)
    assert line.count(b"\n") == 1  # one line: one atomic write
    assert messages.decode(line) == said


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"garbage\n", "not JSON"),
        (b'{"ended": ["j1", 7, "a", "succeeded", 0.5]}\n', "not a list of messages"),
        (b"[]\n", "not a list of messages"),
        (b'["e", "j1"]\n', "not [kind, fields...]"),
        (b'["eabcde"]\n', "not [kind, fields...]"),  # not read as a message of letters
        (b'[["zz", 1]]\n', "unknown message kind 'zz'"),
        (b'[["t", [["a", "succeeded", 0.5]], 7]]\n', "message 't': 2 fields, not 1"),
        (b'[["i", false], ["s", 1]]\n', "message 's': 1 fields, not 9"),
        (b'[["h", "j"]]\n', "message 'h': 1 fields, not 9"),
        (b'[["h", "j", "n", "q", "", ["a policy?"], 1, 2, 0.0, null]]\n', "message 'h': "),
    ],
)
def test_a_line_that_is_not_a_message_is_refused_with_its_reason(line: bytes, reason: str) -> None:
    with pytest.raises(Garbled) as refused:
        messages.decode(line)
    assert reason in str(refused.value)
    assert repr(line[:20])[2:-1][:10] in str(refused.value)  # the line is shown


def test_a_long_garbled_line_is_shown_cut() -> None:
    with pytest.raises(Garbled) as refused:
        messages.decode(b"x" * 5000)
    assert len(str(refused.value)) < 400 and str(refused.value).endswith("...")

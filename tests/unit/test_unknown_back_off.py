"""Rolling deploys: a job refused for its unknown name waits longer after each refusal (5 s,
10, 20, then 30 s apart), never past the grace's end and never under a second, so a job
refused through the default grace leaves about 20 attempt rows, not one every 5 s."""

from __future__ import annotations

from tenure.core import causes
from tenure.core.records import Reservation, WorkerRef
from tenure.core.retry import HANDED_BACK_DELAY_S, Counters, Policy, decide
from tenure.worker.unknown import HANDED_BACK_MAX_S, Refusals, back_off, unknown_job

GRACE = 600.0


def refused(count: int, elapsed: float) -> Refusals:
    first = None if count == 0 else 1000.0
    return Refusals(first_at=first, workers=frozenset({"w-old"}), now=1000.0 + elapsed, count=count)


def test_each_refusal_waits_twice_the_last_up_to_the_cap() -> None:
    waits = [back_off(refused(n, 0.0), GRACE) for n in range(6)]
    assert waits == [HANDED_BACK_DELAY_S, 10.0, 20.0, HANDED_BACK_MAX_S, 30.0, 30.0]
    assert back_off(refused(10_000, 0.0), GRACE) == HANDED_BACK_MAX_S  # no overflow


def test_the_wait_ends_with_the_grace_but_is_never_a_busy_loop() -> None:
    assert back_off(refused(5, GRACE - 7.0), GRACE) == 7.0
    assert back_off(refused(5, GRACE - 0.01), GRACE) == 1.0


def test_the_refusals_over_the_default_grace_are_a_few_not_one_every_5_s() -> None:
    at, count = 0.0, 0
    while at < GRACE:
        at += back_off(refused(count, at), GRACE)
        count += 1
    assert count <= 25 < GRACE / HANDED_BACK_DELAY_S


def test_the_hand_back_carries_its_wait_to_the_retry_decision() -> None:
    res = Reservation("j1", "long_report", "default", "{}", Policy(), 3, 3, 0.0)
    ended = unknown_job(res, WorkerRef("w-old", "h", 1), "app on w-old", GRACE, refused(2, 50.0))
    assert ended.outcome == "deferred" and ended.cause == causes.UNKNOWN_JOB
    assert ended.snooze == 20.0
    decision = decide(Policy(), Counters(), "deferred", 0.0, snooze=ended.snooze)
    assert decision.retry and decision.delay == 20.0

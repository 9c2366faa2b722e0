"""Rolling deploys: a job refused for its unknown name waits longer after each refusal (5 s,
then as long as it has been refused so far: 5, 10, 20, then 30 s apart), never past the grace's
end and never under a second; a worker records its refusal of a job once, not once per round."""

from __future__ import annotations

from tenure.core import causes
from tenure.core.records import Reservation, WorkerRef
from tenure.core.retry import HANDED_BACK_DELAY_S, Counters, Policy, decide
from tenure.worker.unknown import HANDED_BACK_MAX_S, Refusals, back_off, unknown_job

GRACE = 600.0
RES = Reservation("j1", "long_report", "default", "{}", Policy(), 3, 3, 0.0)
OLD = WorkerRef("w-old", "h", 1)


def refused(elapsed: float | None, *, mine: bool = False) -> Refusals:
    """Refusals of a job first refused at 1000 s, `elapsed` seconds ago (None: never)."""
    if elapsed is None:
        return Refusals(now=1000.0)
    return Refusals(first_at=1000.0, workers=frozenset({"w-old"}), now=1000.0 + elapsed, mine=mine)


def test_each_wait_is_as_long_as_the_refusals_so_far_up_to_the_cap() -> None:
    at: float | None = None
    waits = []
    for _ in range(7):
        wait = back_off(refused(at), GRACE)
        waits.append(wait)
        at = (at or 0.0) + wait
    assert waits == [HANDED_BACK_DELAY_S, 5.0, 10.0, 20.0, HANDED_BACK_MAX_S, 30.0, 30.0]


def test_the_wait_ends_with_the_grace_but_is_never_a_busy_loop() -> None:
    assert back_off(refused(GRACE - 7.0), GRACE) == 7.0
    assert back_off(refused(GRACE - 0.01), GRACE) == 1.0
    assert back_off(refused(None), 0.5) == 1.0


def test_the_hand_back_carries_its_wait_to_the_retry_decision() -> None:
    ended = unknown_job(RES, OLD, "app on w-old", GRACE, refused(20.0))
    assert ended.outcome == "deferred" and ended.cause == causes.UNKNOWN_JOB
    assert ended.snooze == 20.0
    decision = decide(Policy(), Counters(), "deferred", 0.0, snooze=ended.snooze)
    assert decision.retry and decision.delay == 20.0


def test_a_worker_records_its_refusal_once_and_another_worker_its_own() -> None:
    assert unknown_job(RES, OLD, "app", GRACE, refused(None)).history
    assert not unknown_job(RES, OLD, "app", GRACE, refused(30.0, mine=True)).history
    assert unknown_job(RES, WorkerRef("w-new", "h", 2), "app", GRACE, refused(30.0)).history
    # the end of the grace is recorded however often this worker refused it before
    last = unknown_job(RES, OLD, "app", GRACE, refused(GRACE, mine=True))
    assert last.outcome == "failed" and last.history

"""Rolling deploys: a job refused for its unknown name waits longer after each refusal (5 s,
then as long as it has been refused so far: 5, 10, 20, then 30 s apart), never past the grace's
end and never under a second; a worker records its refusal of a job once, not once per round."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import tenure
from tenure.core import causes
from tenure.core.records import Reservation, WorkerRecord, WorkerRef
from tenure.core.retry import HANDED_BACK_DELAY_S, Counters, Policy, decide
from tenure.worker.unknown import (
    HANDED_BACK_MAX_S,
    KNOWN_ELSEWHERE_WAIT_S,
    Refusals,
    back_off,
    refusals,
    unknown_job,
)

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


def test_once_a_worker_that_knows_the_job_is_up_the_old_one_hands_it_back_within_a_second() -> None:
    # the old and the new worker race for the job when it is due: a long wait after the old
    # worker wins a round would keep the job from the new code for up to HANDED_BACK_MAX_S
    late = replace(refused(600.0 - 100.0), known_elsewhere=True)
    assert back_off(late, GRACE) == KNOWN_ELSEWHERE_WAIT_S == 1.0
    assert back_off(replace(refused(None), known_elsewhere=True), GRACE) == 1.0


def test_refusals_read_whether_another_live_worker_serving_the_queue_knows_it(
    tmp_path: Path,
) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'tenure.db'}")
    job_id = app.job(timeout=10, name="long_report")(lambda n: None).dispatch(1).id
    now = app.store.now()
    old = WorkerRecord("w-old", "h", 1, ("default",), 1, now, now, known=("noop",))
    app.store.heartbeat(worker=old)
    assert not refusals(app.store, job_id, "w-old").known_elsewhere
    # a worker that knows it but serves another queue does not count; nor does a stopped one
    other_queue = WorkerRecord("w-q", "h", 2, ("mail",), 1, now, now, known=("long_report",))
    app.store.heartbeat(worker=other_queue)
    assert not refusals(app.store, job_id, "w-old").known_elsewhere
    new = WorkerRecord("w-new", "h", 3, ("default",), 1, now, now, known=("long_report",))
    app.store.heartbeat(worker=new)
    assert refusals(app.store, job_id, "w-old").known_elsewhere
    assert not refusals(app.store, job_id, "w-new").known_elsewhere  # not itself
    app.store.heartbeat(worker=replace(new, stopped_at=now))
    assert not refusals(app.store, job_id, "w-old").known_elsewhere

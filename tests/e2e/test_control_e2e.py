"""Cancel one job and pause a queue, with real workers on SQLite, PostgreSQL and Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, isolated_project, state_is, wait_until

TEMPLATE = Path(__file__).with_name("control_jobs_template.py")
LEASE = "3"  # a heartbeat every second: a cancel reaches the worker within one


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, TEMPLATE) as project:
        yield project


def started(project: Project, job_id: str, event: str = "start") -> bool:
    return bool(project.ledger.events(job_id, event))


def test_a_running_job_cancelled_stops_at_the_signal_and_is_not_retried(project: Project) -> None:
    project.worker("--lease", LEASE)
    job_id = project.jobs.until_cancelled.dispatch().id
    wait_until(lambda: started(project, job_id), 60, "the job to start")
    asked_at = time.time()
    assert project.app.cancel(job_id).state == "stopping"
    wait_until(state_is(project.app, job_id, "cancelled"), 30, "the job to be cancelled")
    # the job saw the soft stop (CancelRequested, with ctx.cancelled) within about a heartbeat
    (seen,) = project.ledger.events(job_id, "cancelled:True")
    assert seen[4] - asked_at < 10
    info = project.app.get_job(job_id)
    assert [a.outcome for a in info.attempts] == ["cancelled"]
    assert (info.tries_used, info.exceptions) == (0, 0)
    # never retried: a job dispatched after it runs, and it has not run again
    after = project.jobs.noop.dispatch().id
    wait_until(state_is(project.app, after, "succeeded"), 60, "a later job to run")
    assert len(project.ledger.events(job_id, "start")) == 1
    assert project.app.get_job(job_id).state == "cancelled"


def test_a_job_that_ignores_the_cancel_is_killed_after_kill_after(project: Project) -> None:
    project.worker("--lease", LEASE)
    job_id = project.jobs.ignores_cancel.dispatch().id
    wait_until(lambda: started(project, job_id), 60, "the job to start")
    project.app.cancel(job_id)
    wait_until(state_is(project.app, job_id, "cancelled"), 30, "the job to be cancelled")
    # on a loaded machine the child may not run its handler before the kill: then there is no
    # "caught" to time from, and the kill itself is what this test proves
    caught = project.ledger.events(job_id, "caught")
    assert len(caught) <= 1
    info = project.app.get_job(job_id)
    (ended,) = info.attempts
    assert ended.outcome == "cancelled"
    assert ended.error is not None and "killed" in ended.error
    assert info.finished_at is not None
    # killed kill_after (3 s) after the signal it swallowed, so a second or more after it
    # caught it even when the signal reached it late; it never ended
    assert project.ledger.events(job_id, "end") == []
    assert ended.ended_at is not None
    assert not caught or ended.ended_at - caught[0][4] >= 0.9
    assert info.tries_used == 0
    # the worker goes on with the next job
    after = project.jobs.noop.dispatch().id
    wait_until(state_is(project.app, after, "succeeded"), 60, "the worker to go on")


def test_a_queued_job_cancelled_never_runs(project: Project) -> None:
    cancelled = project.jobs.noop.dispatch(1).id
    kept = project.jobs.noop.dispatch(2).id
    assert project.app.cancel(cancelled).state == "cancelled"
    assert project.worker("--burst", "--lease", LEASE).wait(120) == 0
    assert project.app.get_job(kept).state == "succeeded"
    assert project.app.get_job(cancelled).state == "cancelled"
    assert project.ledger.events(cancelled, "ran") == []


def test_pause_stops_reservation_at_once_and_resume_restarts_it(project: Project) -> None:
    project.worker("--queues", "default,other", "--concurrency", "2", "--lease", LEASE)
    running = project.jobs.sleep_for.dispatch(1.5).id
    wait_until(lambda: started(project, running), 60, "a job to start")
    project.app.pause_queue("default")
    held = project.jobs.noop.dispatch().id  # dispatch still works
    # `default` comes first for this worker: a job of `other` dispatched later running while
    # `held` waits shows the live worker reserves, but not from the paused queue
    other = project.jobs.elsewhere.dispatch().id
    wait_until(state_is(project.app, other, "succeeded"), 60, "the unpaused queue's job")
    wait_until(state_is(project.app, running, "succeeded"), 60, "the running job to finish")
    assert project.app.get_job(held).state == "queued"
    assert project.ledger.events(held, "ran") == []
    (row,) = [w for w in project.app.queue_waits() if w.queue == "default"]
    assert row.paused and row.ready == 1
    resumed_at = time.monotonic()
    project.app.resume_queue("default")
    wait_until(state_is(project.app, held, "succeeded"), 60, "the resumed queue's job")
    assert time.monotonic() - resumed_at < 10


def test_an_async_job_cancelled_gets_cancellederror_and_is_not_retried(project: Project) -> None:
    project.worker("--lease", LEASE)
    job_id = project.jobs.async_until_cancelled.dispatch().id
    wait_until(lambda: started(project, job_id), 60, "the job to start")
    assert project.app.cancel(job_id).state == "stopping"
    wait_until(state_is(project.app, job_id, "cancelled"), 30, "the job to be cancelled")
    wait_until(lambda: project.ledger.events(job_id, "cancelled:True"), 30, "its cleanup")
    info = project.app.get_job(job_id)
    assert [a.outcome for a in info.attempts] == ["cancelled"]
    assert info.tries_used == 0

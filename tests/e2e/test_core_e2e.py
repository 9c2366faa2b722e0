"""The core promises, proved with real worker processes on the embedded SQLite store."""

from __future__ import annotations

import signal
import time

import pytest

from tenure.core.errors import PayloadError
from tenure.core.records import NewJob
from tenure.core.retry import Policy

from e2e.helpers import Project, state_is, wait_until

pytestmark = pytest.mark.slow


def outcomes(project: Project, job_id: str) -> list[str | None]:
    return [a.outcome for a in project.app.get_job(job_id).attempts]


def test_job_three_times_longer_than_its_lease_runs_once(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(6)
    project.worker("--lease", "2", "--concurrency", "2")
    wait_until(state_is(project.app, h.id, "succeeded", "failed"), 60, "the slow job to end")
    assert outcomes(project, h.id) == ["succeeded"]
    assert len(project.ledger.events(h.id, "start")) == 1


def test_sigkill_of_the_whole_worker_is_recovered_within_a_lease(project: Project) -> None:
    h = project.jobs.sleep_for.options().dispatch(3)
    first = project.worker("--lease", "2")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    first.kill_group()
    killed_at = time.time()
    project.worker("--lease", "2")
    wait_until(state_is(project.app, h.id, "succeeded", "failed"), 60, "the re-run to end")
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["crashed", "succeeded"]
    crashed = info.attempts[0]
    assert crashed.error is not None and "stopped heartbeating" in crashed.error
    assert f"pid {crashed.pid}" in crashed.error
    starts = project.ledger.events(h.id, "start")
    assert [s[1] for s in starts] == [1, 2]  # nobody else ran it
    rerun_after = starts[1][4] - killed_at
    print(f"SIGKILL to re-run: {rerun_after:.2f} s with --lease 2")
    assert rerun_after < 2 * 2 + 3  # about one lease, plus worker start-up on a loaded machine


def test_timeout_is_recorded_and_the_worker_keeps_working(project: Project) -> None:
    worker = project.worker("--lease", "5")
    slow = project.jobs.too_slow.dispatch()
    wait_until(lambda: outcomes(project, slow.id)[:1] == ["timed_out"], 60, "the timeout")
    after = project.jobs.noop.dispatch(1)
    wait_until(state_is(project.app, after.id, "succeeded"), 60, "the next job")
    assert worker.proc.poll() is None  # the worker survived its job's timeout
    wait_until(state_is(project.app, slow.id, "failed"), 60, "all tries used")
    info = project.app.get_job(slow.id)
    assert [a.outcome for a in info.attempts] == ["timed_out"] * 3
    assert "timed out after 1 s" in (info.attempts[0].error or "")


def test_fail_on_timeout_fails_at_once(project: Project) -> None:
    project.worker("--lease", "5")
    h = project.jobs.too_slow_fail_fast.dispatch()
    wait_until(state_is(project.app, h.id, "failed"), 60, "the job to fail")
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["timed_out"]
    assert "fail_on_timeout" in (info.last_error or "")


def test_job_that_swallows_jobtimeout_is_killed_at_timeout_plus_kill_after(
    project: Project,
) -> None:
    project.worker("--lease", "5")
    h = project.jobs.ignores_timeout.dispatch()
    wait_until(state_is(project.app, h.id, "failed"), 60, "the job to be killed")
    attempt = project.app.get_job(h.id).attempts[0]
    assert attempt.outcome == "timed_out"
    assert "was killed at 2 s" in (attempt.error or "")
    assert project.ledger.events(h.id, "caught")  # it did see the soft timeout
    assert not project.ledger.events(h.id, "end")  # and never finished: it was killed
    assert attempt.ended_at is not None
    assert 1.5 <= attempt.ended_at - attempt.started_at < 10


def test_crash_loop_stops_at_max_exceptions(project: Project) -> None:
    project.worker("--lease", "5")
    h = project.jobs.crash_always.dispatch()
    wait_until(state_is(project.app, h.id, "failed"), 60, "the crash loop to stop")
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["crashed", "crashed"]
    assert "max_exceptions=2" in (info.last_error or "")
    assert "signal 9" in (info.attempts[1].error or "")


def test_sigterm_with_enough_grace_lets_the_job_finish(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(2)
    worker = project.worker("--grace", "20")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    assert outcomes(project, h.id) == ["succeeded"]


def test_sigterm_with_short_grace_hands_the_job_back_at_once(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(30)
    worker = project.worker("--grace", "0.5", "--lease", "30")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["interrupted"]
    assert info.state == "queued"  # available again at once, no lease wait
    assert info.tries_used == 0 and info.exceptions == 0  # not counted against the job


def test_bad_input_fails_that_job_and_loses_nothing(project: Project) -> None:
    store = project.app.store
    unknown = NewJob(
        id="unknown-job",
        name="no_such_job",
        queue="default",
        payload='{"args":[],"kwargs":{}}',
        policy=Policy(),
    )
    corrupt = NewJob(
        id="corrupt-job", name="noop", queue="default", payload="{not json", policy=Policy()
    )
    store.enqueue_many([unknown, corrupt])
    good = project.jobs.noop.dispatch(7)
    project.worker("--lease", "5", "--unknown-grace", "0")  # 0: no rolling-deploy hand-back
    for job_id in ("unknown-job", "corrupt-job"):
        wait_until(state_is(project.app, job_id, "failed"), 60, f"{job_id} to fail")
    wait_until(state_is(project.app, good.id, "succeeded"), 60, "the good job")
    assert "unknown job 'no_such_job'" in (project.app.get_job("unknown-job").last_error or "")
    assert "payload is not valid JSON" in (project.app.get_job("corrupt-job").last_error or "")
    assert len(project.app.get_job("unknown-job").attempts) == 1  # no loop


def test_unstorable_arguments_are_refused_at_dispatch(project: Project) -> None:
    before = project.app.counts()
    with pytest.raises(PayloadError, match="argument 1 of job 'noop' cannot be stored as JSON"):
        project.jobs.noop.dispatch(object())
    with pytest.raises(PayloadError, match="over the"):
        project.jobs.noop.dispatch("x" * 300_000)
    assert project.app.counts() == before


def test_thousand_jobs_over_two_workers_run_exactly_once(project: Project) -> None:
    handles = project.jobs.noop.dispatch_many([(i,) for i in range(1000)])
    for _ in range(2):
        project.worker("--concurrency", "2", "--burst")
    wait_until(lambda: project.app.counts()["succeeded"] == 1000, 180, "1,000 jobs to succeed")
    ran = [line[0] for line in project.ledger.lines()]
    assert len(ran) == 1000
    assert set(ran) == {h.id for h in handles}

"""An attempt's whole process tree ends with it: at the hard timeout, over the memory cap, and
at a worker's hard stop; an async job that blocks its event loop past its timeout is
recorded as timed out. Real workers, real subprocesses, on SQLite."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, state_is, wait_until
from e2e.tree_helpers import running, tree_project, wait_for_grandchild

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    with tree_project(tmp_path, f"sqlite:///{tmp_path / 'tenure.db'}", monkeypatch) as p:
        yield p


def outcomes(project: Project, job_id: str) -> list[str | None]:
    return [a.outcome for a in project.app.get_job(job_id).attempts]


def test_hard_timeout_kills_the_processes_the_job_started(project: Project) -> None:
    worker = project.worker()
    h = project.jobs.spawn_and_ignore_timeout.dispatch()
    grandchild = wait_for_grandchild(project)
    wait_until(state_is(project.app, h.id, "failed"), 60, "the hard kill")
    assert outcomes(project, h.id) == ["timed_out"]
    wait_until(lambda: not running(grandchild), 10, f"the job's `sleep` (pid {grandchild}) to end")
    assert project.ledger.events(h.id, "caught")  # it did ignore the soft timeout
    assert worker.proc.poll() is None


def test_hard_timeout_kills_a_double_forked_process_the_job_started(project: Project) -> None:
    """`setsid cmd &`: re-parented away from the job at once, in a session of its own; the
    worker's child is a subreaper on Linux, so the orphan comes back to it and dies with it."""
    project.worker()
    h = project.jobs.spawn_double_forked_and_ignore_timeout.dispatch()
    orphan = wait_for_grandchild(project)
    wait_until(state_is(project.app, h.id, "failed"), 60, "the hard kill")
    assert outcomes(project, h.id) == ["timed_out"]
    wait_until(lambda: not running(orphan), 10, f"the double-forked `sleep` (pid {orphan}) to end")


def test_an_orphan_that_ended_is_reaped_by_the_child(project: Project) -> None:
    """A job's double-forked process that ends comes back to the child (its subreaper) as a
    zombie; the child reaps it after the job (at the latest when it waits for its next)."""
    project.worker()
    h = project.jobs.orphan_that_ends.dispatch()
    wait_until(state_is(project.app, h.id, "succeeded"), 60, "the job")
    ((orphan,),) = [
        [int(e.split(":", 1)[1]) for _, _, _, e, _ in project.ledger.lines() if "orphan:" in e]
    ]
    wait_until(
        lambda: not Path(f"/proc/{orphan}").exists(), 10, f"the orphan (pid {orphan}) reaped"
    )


def test_memory_cap_counts_and_kills_the_processes_the_job_started(project: Project) -> None:
    worker = project.worker("--memory", "120")
    h = project.jobs.spawn_memory_hog.dispatch(250)
    grandchild = wait_for_grandchild(project)
    wait_until(state_is(project.app, h.id, "failed"), 60, "the memory kill")
    assert outcomes(project, h.id) == ["crashed"]
    error = project.app.get_job(h.id).attempts[0].error or ""
    assert "over the worker's --memory 120 MB" in error
    wait_until(lambda: not running(grandchild), 10, f"the memory hog (pid {grandchild}) to end")
    after = project.jobs.noop.dispatch()
    wait_until(state_is(project.app, after.id, "succeeded"), 60, "the next job")
    assert worker.proc.poll() is None


def test_hard_stop_kills_the_processes_the_job_started(project: Project) -> None:
    worker = project.worker("--grace", "1")
    h = project.jobs.spawn_and_wait.dispatch()
    grandchild = wait_for_grandchild(project)
    worker.signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    assert outcomes(project, h.id) == ["interrupted"]
    wait_until(lambda: not running(grandchild), 10, f"the job's `sleep` (pid {grandchild}) to end")


def test_a_killed_supervisor_leaves_none_of_the_processes_its_jobs_started(
    project: Project,
) -> None:
    """SIGKILL (the OOM killer, kill -9) gives the supervisor no chance to clean up: its
    child dies by PDEATHSIG, and the reaper ends what the job started."""
    worker = project.worker()
    project.jobs.spawn_and_wait.dispatch()
    grandchild = wait_for_grandchild(project)
    worker.signal(signal.SIGKILL)
    worker.wait(60)
    wait_until(lambda: not running(grandchild), 10, f"the job's `sleep` (pid {grandchild}) to end")


def test_async_job_blocking_past_its_timeout_is_timed_out(project: Project) -> None:
    project.worker()
    h = project.jobs.async_blocks.dispatch(3)
    wait_until(state_is(project.app, h.id, "succeeded", "failed"), 60, "the attempt to end")
    assert project.ledger.events(h.id, "end")  # nothing could stop the blocking call
    (attempt,) = project.app.get_job(h.id).attempts
    assert attempt.outcome == "timed_out", attempt.error
    assert "past its 1 s timeout" in (attempt.error or "")
    assert "blocking call" in (attempt.error or "")

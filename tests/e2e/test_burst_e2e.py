"""`--burst` drains what it can and names what it leaves: it waits for a dead worker's job
(whose lease stops being renewed) and runs it, and says how many jobs are still scheduled and
when the next is due. Real worker processes on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, state_is, wait_until
from e2e.tree_helpers import messages, tree_project

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    with tree_project(tmp_path, f"sqlite:///{tmp_path / 'tenure.db'}", monkeypatch) as p:
        yield p


def test_burst_runs_a_dead_workers_job_and_names_what_is_scheduled(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(3)
    later = project.jobs.noop.options(delay=600).dispatch()
    dead = project.worker("--lease", "3")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    dead.kill_group()  # SIGKILL: its lease is no longer renewed, nobody ends the attempt
    assert project.app.get_job(h.id).state == "running"

    burst = project.worker("--burst", "--lease", "3")
    assert burst.wait(120) == 0
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["crashed", "succeeded"], info.attempts
    log = "\n".join(messages(burst))
    assert f"running job(s) ({h.id}): if their worker renews the lease" in log, log
    assert "1 scheduled (1 delayed, the next due in" in log, log
    assert project.app.get_job(later.id).state == "scheduled"


def test_burst_waits_for_a_job_due_within_a_lease(project: Project) -> None:
    """A retry with a short backoff or a job a guard deferred by a second is the queue's own
    work: a burst worker that left it behind would leave a drained queue undrained."""
    soon = project.jobs.noop.options(delay=2).dispatch()
    burst = project.worker("--burst")
    assert burst.wait(60) == 0
    assert project.app.get_job(soon.id).state == "succeeded"
    assert "waiting" in "\n".join(messages(burst))


def test_burst_with_nothing_left_says_so(project: Project) -> None:
    project.jobs.noop.dispatch()
    burst = project.worker("--burst")
    assert burst.wait(60) == 0
    assert "--burst: the queues are empty; nothing is scheduled or running" in messages(burst)
    assert project.app.counts()["succeeded"] == 1


def test_burst_does_not_wait_for_a_live_workers_job(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(600)
    live = project.worker("--lease", "3")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    burst = project.worker("--burst", "--lease", "3")
    assert burst.wait(60) == 0  # its lease keeps moving: the live worker's own business
    assert "1 running on other live workers" in "\n".join(messages(burst))
    assert live.proc.poll() is None
    assert state_is(project.app, h.id, "running")()

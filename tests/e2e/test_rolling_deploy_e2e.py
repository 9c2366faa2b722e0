"""A rolling deploy: new code dispatches a job the old workers do not know. An old worker hands
it back (no try used, one `deferred` attempt naming it however often it refuses, a few seconds
apart: no busy loop), and a new worker runs it once; with no worker that knows it for
--unknown-grace, it fails naming the workers that refused it. Real worker processes, old code
and new."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.core import causes
from tenure.core.retry import HANDED_BACK_DELAY_S
from tenure.describe import describe_job

from e2e.helpers import Project, state_is, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = Path(__file__).with_name("hostile_jobs_template.py")


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    url = f"sqlite:///{tmp_path / 'tenure.db'}"
    # the old code: the same store, without the job the new code adds
    (tmp_path / "old_jobs.py").write_text(
        f"import tenure\napp = tenure.App({url!r})\n\n@app.job\ndef noop() -> None: ...\n"
    )
    p = Project(tmp_path, url, TEMPLATE)
    yield p
    p.stop_all()


def queues_text(project: Project) -> str:
    """`tenure queues`, as an operator runs it, on the project's store."""
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-m", "tenure", "queues", "--url", project.app.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project.dir,
        env={**os.environ, "PYTHONPATH": str(src), "COLUMNS": "100"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def refusals(project: Project, job_id: str) -> list[str]:
    return [
        a.worker_id
        for a in project.app.get_job(job_id).attempts
        if a.outcome == "deferred" and a.cause == causes.UNKNOWN_JOB
    ]


def test_an_old_worker_hands_a_new_job_back_and_a_new_worker_runs_it_once(
    project: Project,
) -> None:
    h = project.jobs.long_report.dispatch(0.1)
    project.worker("--app", "old_jobs:app")
    wait_until(lambda: refusals(project, h.id), 60, "a hand-back")
    first_due = project.app.get_job(h.id).run_at
    # the same worker refuses it again: the job is put off again, its history does not grow
    wait_until(lambda: project.app.get_job(h.id).run_at > first_due, 60, "a second hand-back")
    info = project.app.get_job(h.id)
    assert info.state in ("queued", "scheduled") and info.tries_used == 0
    assert len(refusals(project, h.id)) == 1 and len(info.attempts) == 1
    assert "does not know job 'long_report'" in (info.attempts[0].error or "")
    # no busy loop: the second refusal came when the first's wait was over, and waits again
    assert info.run_at - first_due >= HANDED_BACK_DELAY_S * 0.8
    # each worker's record names the jobs its code defines (tenure's own among them)
    (old,) = [w.known or () for w in project.app.live_workers()]
    assert "noop" in old and "long_report" not in old
    # the operator sees the deploy that has not rolled out: a job no live worker knows
    assert "'default': 1 waiting job(s) no live worker knows ('long_report')" in queues_text(
        project
    )
    project.worker()  # the new code
    wait_until(state_is(project.app, h.id, "succeeded"), 60, "a worker that knows it")
    known = [w.known or () for w in project.app.live_workers()]
    assert sorted("long_report" in k for k in known) == [False, True]
    project.jobs.long_report.dispatch(0.1)  # waiting again, with a worker that knows it up
    assert "no live worker knows" not in queues_text(project)
    outcomes = [a.outcome for a in project.app.get_job(h.id).attempts]
    assert outcomes.count("succeeded") == 1 and set(outcomes) == {"deferred", "succeeded"}
    # the old worker's second refusal left no row: `jobs show` says what the gap was
    (refused_by,) = refusals(project, h.id)
    gap = f": handed back again by worker {refused_by}, whose code does not know this job"
    assert any(gap in line for line in describe_job(project.app.get_job(h.id)))


def test_with_no_worker_that_knows_it_for_the_grace_it_fails_naming_the_refusals(
    project: Project,
) -> None:
    h = project.jobs.long_report.dispatch(0.1)
    project.worker("--app", "old_jobs:app", "--unknown-grace", "1")
    wait_until(state_is(project.app, h.id, "failed"), 60, "the grace to pass")
    info = project.app.get_job(h.id)
    assert "no worker that knows it ran it within --unknown-grace 1 s" in (info.last_error or "")
    assert f"refused by {refusals(project, h.id)[0]}" in (info.last_error or "")

"""A job's error that a store cannot record as it is, or whose text cannot even be read, fails
only its attempt, with its text (escaped, capped) or its type named: never a store outage, a
dead child recorded as `crashed`, or a retry for it. Real workers on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, isolated_project, state_is, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = Path(__file__).with_name("hostile_jobs_template.py")


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, TEMPLATE, migrate=False) as project:
        yield project


def test_hostile_errors_fail_their_attempts_with_their_text(project: Project) -> None:
    jobs = project.jobs
    unencodable = jobs.unencodable.dispatch()
    unreadable = jobs.unreadable.dispatch()
    async_unreadable = jobs.async_unreadable.dispatch()
    huge = jobs.huge_message.dispatch()
    project.worker("--lease", "5")
    for h in (unencodable, unreadable, async_unreadable, huge):
        wait_until(state_is(project.app, h.id, "failed"), 90, f"job {h.id} to fail")

    info = project.app.get_job(unencodable.id)
    # each of its tries failed with its own text; none crashed, none was rescued
    assert [a.outcome for a in info.attempts] == ["failed"] * 3
    assert {a.error for a in info.attempts} == {"ValueError: a\\x00b \\ud800 end"}
    for h in (unreadable, async_unreadable):
        attempts = project.app.get_job(h.id).attempts
        assert [a.outcome for a in attempts] == ["failed"] * 3
        assert attempts[0].error == (
            "Unreadable: (its text could not be read: str() raised RuntimeError)"
        )
    (attempt,) = project.app.get_job(huge.id).attempts
    assert attempt.outcome == "failed" and attempt.error is not None
    assert attempt.error.startswith("ValueError: HEAD") and attempt.error.endswith("TAIL")
    assert "of 5,000,020 characters cut" in attempt.error

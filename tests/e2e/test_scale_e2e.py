"""10,000 jobs over 4 worker processes on each backend: every job exactly once, none lost."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, isolated_project, wait_until

pytestmark = pytest.mark.slow

JOBS = 10_000


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def any_project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, migrate=False) as project:
        yield project


def test_ten_thousand_jobs_over_four_workers_run_exactly_once(any_project: Project) -> None:
    project = any_project
    handles = project.jobs.noop.dispatch_many([(i,) for i in range(JOBS)])
    for _ in range(4):
        project.worker("--burst", "--lease", "10")
    wait_until(lambda: project.app.counts()["succeeded"] == JOBS, 300, f"{JOBS:,} jobs")
    runs = collections.Counter(line[0] for line in project.ledger.lines())
    assert set(runs) == {h.id for h in handles}, "a job was lost"
    assert max(runs.values()) == 1, "a job ran twice"
    assert project.app.counts()["failed"] == 0

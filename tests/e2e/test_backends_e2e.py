"""The batch scenarios of test_batches_e2e.py with real workers on the server backends: Redis and
PostgreSQL, each test on its own key prefix or schema. The scenarios are the same functions, so
the backends are held to exactly the SQLite assertions; one more runs a coordinated batch of a
thousand ranges with progress sampled while four workers drain it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import test_batches_e2e as scenarios
from e2e.helpers import Project, isolated_project, wait_until

pytestmark = pytest.mark.slow

# jobs_template.py also defines transactional jobs, which an App on Redis refuses at import
TEMPLATE = Path(__file__).with_name("batch_jobs_template.py")


@pytest.fixture(params=["redis", "postgres"])
def server_project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, TEMPLATE) as project:
        yield project


@pytest.mark.parametrize("allow_failures", [False, True])
def test_a_failing_member_runs_catch_once_and_then_only_if_allowed(
    server_project: Project, allow_failures: bool
) -> None:
    scenarios.test_a_failing_member_runs_catch_once_and_then_only_if_allowed(
        server_project, allow_failures
    )


def test_killing_a_worker_mid_batch_still_completes_with_callbacks_once(
    server_project: Project,
) -> None:
    scenarios.test_killing_a_worker_mid_batch_still_completes_with_callbacks_once(server_project)


def test_cancel_mid_batch_starts_nothing_new(server_project: Project) -> None:
    scenarios.test_cancel_mid_batch_starts_nothing_new(server_project)


def test_a_coordinated_batch_runs_every_range_once_with_monotonic_progress(
    server_project: Project,
) -> None:
    project = server_project
    jobs = project.jobs
    b = project.app.batch_over_ids(
        jobs.export_rows, 1, 50_000, chunk=50, slice_jobs=100, then=jobs.callback.sig("then")
    )
    for _ in range(4):
        project.worker("--concurrency", "2")
    samples: list[float] = []
    deadline = time.monotonic() + 120
    while not scenarios.settled(project, b.id):
        samples.append(project.app.get_batch(b.id).progress)
        assert time.monotonic() < deadline, "the batch did not finish in 120 s"
        time.sleep(0.05)  # the sampling period, not a wait for a result
    info = project.app.get_batch(b.id)
    samples.append(info.progress)
    assert (info.state, info.progress, info.failed) == ("succeeded", 1.0, 0)
    assert info.total == info.done == 1_000 + 10
    assert all(x <= y for x, y in itertools.pairwise(samples)), "progress went back"
    ranges = scenarios.events(project, "range:")
    assert len(ranges) == len(set(ranges)) == 1_000
    assert info.then_job_id is not None
    wait_until(lambda: scenarios.events(project, "callback:then"), 60, "then to run")
    assert scenarios.events(project, "callback:") == ["callback:then"]

"""The guard scenarios of test_guards_e2e.py with real workers on Redis, each test under its own
key prefix: the same functions, so Redis is held to exactly the SQLite assertions (a unique key
raced from 4 processes, 1,000 jobs over 50 overlap keys on 4 workers, rate_limit 20/second
over 200 jobs, once() under random worker SIGKILLs).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import helpers
from e2e import test_guards_e2e as scenarios
from e2e.helpers import Project, isolated_project

pytestmark = pytest.mark.slow


@pytest.fixture
def redis_project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Project]:
    # The shared jobs module defines transactional jobs, which an App on Redis refuses at
    # definition (as it should); this copy defines them as plain jobs, which these tests never
    # dispatch.
    text = helpers.TEMPLATE.read_text()
    template = tmp_path / "jobs_template.py"
    template.write_text(
        text.replace("transactional=True", 'transactional=not STORE_URL.startswith("redis")')
    )
    monkeypatch.setattr(helpers, "TEMPLATE", template)
    with isolated_project(request, "redis", tmp_path) as project:
        yield project


def test_concurrent_dispatches_of_one_unique_key_store_one_job(redis_project: Project) -> None:
    scenarios.test_concurrent_dispatches_of_one_unique_key_store_one_job(redis_project)


def test_unique_key_is_free_again_once_the_job_completed(redis_project: Project) -> None:
    scenarios.test_unique_key_is_free_again_once_the_job_completed(redis_project)


def test_overlap_keys_never_run_concurrently_and_deferrals_use_no_try(
    redis_project: Project,
) -> None:
    scenarios.test_overlap_keys_never_run_concurrently_and_deferrals_use_no_try(redis_project)


def test_rate_limit_defers_and_never_fails(redis_project: Project) -> None:
    scenarios.test_rate_limit_defers_and_never_fails(redis_project)


def test_once_effect_is_skipped_by_the_rerun_after_a_crash(redis_project: Project) -> None:
    scenarios.test_once_effect_is_skipped_by_the_rerun_after_a_crash(redis_project)


def test_once_effects_run_at_most_once_under_random_worker_kills(redis_project: Project) -> None:
    scenarios.test_once_effects_run_at_most_once_under_random_worker_kills(redis_project)


def test_overlap_holds_when_jobs_of_one_key_queue_back_to_back(redis_project: Project) -> None:
    """The scenario above sends keys round-robin, so a key's previous job has long ended when
    the next one is reserved. Here each key's 20 jobs are queued back to back: four workers
    contend for the same key all the time, and only deferrals keep them apart."""
    deferred = scenarios.overlap_drained(redis_project, [f"c{i // 20}" for i in range(1000)])
    assert deferred > 0, "the keys never contended: the test proves nothing"
    print(f"overlap back to back: 1,000 jobs, {deferred} deferrals")

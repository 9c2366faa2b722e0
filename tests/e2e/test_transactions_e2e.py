"""Transactional completion: the job's own rows and its `succeeded` are one commit."""

from __future__ import annotations

import collections
import random
import sqlite3
import time

import pytest

import tenure
from tenure.core.errors import ConfigError

from e2e.helpers import Project

pytestmark = pytest.mark.slow


def rows_per_job(project: Project) -> collections.Counter[str]:
    with sqlite3.connect(project.app.url.removeprefix("sqlite:///"), timeout=30) as conn:
        return collections.Counter(r[0] for r in conn.execute("SELECT job_id FROM shop_rows"))


def make_table(project: Project) -> None:
    project.app.counts()  # the store's schema first
    with sqlite3.connect(project.app.url.removeprefix("sqlite:///"), timeout=30) as conn:
        conn.execute("CREATE TABLE shop_rows (job_id TEXT NOT NULL, n INTEGER NOT NULL)")


def test_rows_commit_with_the_completion_under_random_kills(project: Project) -> None:
    make_table(project)
    handles = project.jobs.insert_row.dispatch_many([(i,) for i in range(300)])
    rng = random.Random(11)
    workers = [project.worker("--lease", "2", "--concurrency", "2") for _ in range(2)]
    kills = 0
    deadline = time.monotonic() + 300
    while project.app.counts()["succeeded"] < 300:
        assert time.monotonic() < deadline, "jobs did not finish under kills"
        time.sleep(rng.uniform(0.2, 0.6))  # the fault schedule, not a wait for a result
        if kills < 8:
            victim = workers.pop(rng.randrange(len(workers)))
            victim.kill_group()
            kills += 1
            workers.append(project.worker("--lease", "2", "--concurrency", "2"))
    counts = rows_per_job(project)
    assert set(counts) == {h.id for h in handles}
    assert set(counts.values()) == {1}, "a job's row was written twice or lost"
    print(f"transactional: 300 jobs, {kills} worker kills, every row exactly once")


def test_a_failing_transactional_job_leaves_no_row(project: Project) -> None:
    make_table(project)
    ok = project.jobs.insert_row.dispatch(1)
    bad = project.jobs.insert_then_fail.dispatch(2)
    assert project.worker("--burst").wait(60) == 0
    assert project.app.get_job(ok.id).state == "succeeded"
    assert project.app.get_job(bad.id).state == "failed"
    counts = rows_per_job(project)
    assert counts[ok.id] == 1 and counts[bad.id] == 0  # its row was rolled back with it


def test_a_job_that_commits_its_own_transaction_fails_for_good_with_the_reason(
    project: Project,
) -> None:
    make_table(project)
    handle = project.jobs.insert_and_commit.dispatch(1)
    assert project.worker("--burst").wait(60) == 0
    info = project.app.get_job(handle.id)
    # its row committed early, so running it again could write it twice: no retry (tries=5)
    assert info.state == "failed" and len(info.attempts) == 1
    assert "committed or rolled back its ctx.transaction() connection" in (info.last_error or "")
    assert rows_per_job(project)[handle.id] == 1


def test_transactional_jobs_are_refused_on_redis_at_definition() -> None:
    app = tenure.App("redis://127.0.0.1:6379/0")

    def write_rows() -> None: ...

    with pytest.raises(ConfigError, match="transactional=True needs PostgreSQL"):
        app.job(transactional=True)(write_rows)


def test_transaction_without_the_flag_is_a_clear_error() -> None:
    from tenure.context import JobContext

    ctx = JobContext("j", "plain", "default", 1)
    with pytest.raises(tenure.TenureError, match=r"needs @app.job\(transactional=True\)"):
        ctx.transaction()

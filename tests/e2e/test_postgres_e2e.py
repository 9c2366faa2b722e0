"""The core promises and transactional completion with real worker processes on PostgreSQL,
each test on a schema of its own.

Issue 5, acceptance 5: workers SIGKILLed at random points while 500 jobs each insert a row
through `tenure.current().transaction()`; once all have succeeded, every job's row exists
exactly once (the row and the job's `succeeded` are one commit, so a kill leaves neither).
"""

from __future__ import annotations

import collections
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import helpers
from e2e import test_core_e2e as core
from e2e.helpers import Project, isolated_project, wait_until

pytestmark = pytest.mark.slow

# Jobs added to the shared e2e jobs module: the row goes to the store's own schema, through
# the job's transaction, with psycopg's placeholders.
PG_JOBS = """

def rows_table() -> str:
    return f'"{app.store.schema}".shop_rows'


@app.job(timeout=30, tries=20, backoff=0, transactional=True)
def pg_insert_row(n: int) -> None:
    ctx = tenure.current()
    conn = ctx.transaction()
    conn.execute(f"INSERT INTO {rows_table()} (job_id, n) VALUES (%s, %s)", (ctx.job_id, n))
    time.sleep(random.uniform(0.01, 0.08))  # widen the window a kill can land in


@app.job(timeout=30, tries=1, transactional=True)
def pg_insert_then_fail(n: int) -> None:
    ctx = tenure.current()
    conn = ctx.transaction()
    conn.execute(f"INSERT INTO {rows_table()} (job_id, n) VALUES (%s, %s)", (ctx.job_id, n))
    raise RuntimeError("the job fails after writing its row")
"""


@pytest.fixture
def pg_project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Project]:
    template = tmp_path / "pg_jobs_template.py"
    text = helpers.TEMPLATE.read_text().replace("import signal\n", "import random\nimport signal\n")
    template.write_text(text + PG_JOBS)
    monkeypatch.setattr(helpers, "TEMPLATE", template)
    with isolated_project(request, "postgres", tmp_path) as project:
        yield project


def make_table(project: Project) -> None:
    with project.app.store.db.cursor() as cur:
        cur.execute(f"CREATE TABLE {project.jobs.rows_table()} (job_id text NOT NULL, n int)")


def rows_per_job(project: Project) -> collections.Counter[str]:
    with project.app.store.db.cursor() as cur:
        rows = cur.execute(f"SELECT job_id FROM {project.jobs.rows_table()}").fetchall()
    return collections.Counter(r["job_id"] for r in rows)


def test_rows_commit_with_the_completion_under_random_sigkills(pg_project: Project) -> None:
    project = pg_project
    make_table(project)
    handles = project.jobs.pg_insert_row.dispatch_many([(i,) for i in range(500)])
    rng = random.Random(5)
    args = ("--lease", "2", "--concurrency", "2")
    workers = [project.worker(*args) for _ in range(2)]
    kills = 0
    deadline = time.monotonic() + 150
    while project.app.counts()["succeeded"] < 500:
        assert time.monotonic() < deadline, "jobs did not finish under kills"
        time.sleep(rng.uniform(0.3, 0.9))  # the fault schedule, not a wait for a result
        if kills < 15:
            victim = workers.pop(0)  # the longest running: past start-up, mid-work
            victim.kill_group()  # supervisor and children at once, mid-transaction or not
            kills += 1
            workers.append(project.worker(*args))
    counts = rows_per_job(project)
    assert set(counts) == {h.id for h in handles}
    assert set(counts.values()) == {1}, "a job's row was written twice or lost"
    crashed = sum(
        1
        for h in handles
        for a in project.app.get_job(h.id).attempts
        if a.outcome in ("crashed", "lost_lease")
    )
    assert crashed > 0, "no kill landed on a running job: the test proved nothing"
    print(f"postgres transactional: 500 jobs, {kills} kills, {crashed} attempts cut, rows once")


def test_a_failing_transactional_job_leaves_no_row(pg_project: Project) -> None:
    project = pg_project
    make_table(project)
    ok = project.jobs.pg_insert_row.dispatch(1)
    bad = project.jobs.pg_insert_then_fail.dispatch(2)
    assert project.worker("--burst").wait(60) == 0
    assert project.app.get_job(ok.id).state == "succeeded"
    assert project.app.get_job(bad.id).state == "failed"
    counts = rows_per_job(project)
    assert counts[ok.id] == 1 and counts[bad.id] == 0  # its row was rolled back with it


def test_job_three_times_longer_than_its_lease_runs_once(pg_project: Project) -> None:
    core.test_job_three_times_longer_than_its_lease_runs_once(pg_project)


def test_sigkill_of_the_whole_worker_is_recovered_within_a_lease(pg_project: Project) -> None:
    core.test_sigkill_of_the_whole_worker_is_recovered_within_a_lease(pg_project)


def test_thousand_jobs_over_two_workers_run_exactly_once(pg_project: Project) -> None:
    project = pg_project
    handles = project.jobs.noop.dispatch_many([(i,) for i in range(1000)])
    workers = [project.worker("--concurrency", "2", "--burst") for _ in range(2)]
    wait_until(lambda: project.app.counts()["succeeded"] == 1000, 120, "1,000 jobs to succeed")
    ran = collections.Counter(line[0] for line in project.ledger.lines())
    assert set(ran) == {h.id for h in handles}
    assert set(ran.values()) == {1}, "a job ran twice"
    assert all(w.wait(60) == 0 for w in workers)

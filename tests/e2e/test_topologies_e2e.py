"""Real workers on the production topologies: a Redis Sentinel failover while jobs drain (the
same worker process carries on with the new master), and a worker draining a Redis Cluster.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.core.errors import StoreUnavailable
from topologies import ThrowawayRedisSentinel

from e2e import helpers
from e2e.helpers import Project, wait_until
from servers import raw_redis

pytestmark = pytest.mark.slow

JOBS = 300
# A rescued attempt (its end lost with the old master) waits one lease: keep it short.
LEASE_S = "4"
RERUN_REASONS = {"crashed", "lost_lease", "interrupted"}


def project_on(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    # The shared jobs module defines transactional jobs, which an App on Redis refuses; this
    # copy defines them as plain jobs, which these tests never dispatch.
    text = helpers.TEMPLATE.read_text()
    template = tmp_path / "jobs_template.py"
    template.write_text(
        text.replace("transactional=True", 'transactional=not STORE_URL.startswith("redis")')
    )
    monkeypatch.setattr(helpers, "TEMPLATE", template)
    sep = "&" if "?" in url else "?"
    project = Project(tmp_path, f"{url}{sep}prefix=tenure_e2e_{secrets.token_hex(4)}")
    project.app.store.migrate()
    return project


@pytest.fixture
def sentinel_project(
    redis_sentinel: ThrowawayRedisSentinel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Project]:
    master = raw_redis(redis_sentinel.url)
    try:  # the replica's first sync may still run: writes wait for it until it is done
        wait_until(lambda: master.wait(1, 1000) == 1, what="the replica in sync with the master")
    finally:
        master.close()
    # redis+sentinel:// waits for one replica to confirm each write (wait_replicas=1), so what
    # the failover promotes holds everything tenure was told is stored
    project = project_on(redis_sentinel.url, tmp_path, monkeypatch)
    try:
        yield project
    finally:
        project.stop_all()


def succeeded(project: Project) -> int:
    """How many jobs succeeded; -1 while the store is unavailable (right after a failover, until
    the new master has a replica confirming writes again), as a person would retry."""
    try:
        return int(project.app.counts()["succeeded"])
    except StoreUnavailable:
        return -1


def assert_every_run_explained(project: Project, ids: list[str]) -> None:
    """Every job succeeded; each time it started (the ledger, outside tenure) is an attempt
    row, and every attempt before the last ended with a recorded reason to run again."""
    for job_id in ids:
        info = project.app.get_job(job_id)
        assert info.state == "succeeded", (job_id, info.state, info.attempts)
        started = sorted({a for _, a, _, event, _ in project.ledger.events(job_id, "start")})
        numbers = [a.number for a in info.attempts if a.outcome != "deferred"]
        assert set(started) <= set(numbers), (job_id, started, info.attempts)
        for attempt in info.attempts[:-1]:
            assert attempt.outcome in RERUN_REASONS, (job_id, info.attempts)


def test_a_sentinel_failover_while_jobs_drain_loses_nothing(
    sentinel_project: Project, redis_sentinel: ThrowawayRedisSentinel
) -> None:
    project = sentinel_project
    handles = project.jobs.sleep_for.dispatch_many([(0.02,) for _ in range(JOBS)])
    ids = [h.id for h in handles]
    worker = project.worker("--concurrency", "4", "--lease", LEASE_S)
    wait_until(
        lambda: succeeded(project) >= JOBS // 4,
        what="a quarter of the jobs done before the failover",
    )
    old = redis_sentinel.master()
    assert redis_sentinel.failover() != old
    wait_until(lambda: succeeded(project) == JOBS, timeout=180, what="every job done")
    assert worker.proc.poll() is None, "the worker exited instead of following the new master"
    assert_every_run_explained(project, ids)
    assert len(project.ledger.events(ids[-1], "end")) >= 1

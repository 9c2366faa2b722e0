"""Periodic jobs with real workers: 3 worker processes on 2 "hosts" (UTS namespaces of their
own, so each has its own hostname) tick the same periodic job through 10 due times on a clock
the test owns; each due time is dispatched once and runs once."""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tenure.periodic import due_text, run_id

from e2e.helpers import Project, WorkerProcess, isolated_project, wait_until

TEMPLATE = Path(__file__).with_name("periodic_jobs_template.py")
START = datetime(2026, 6, 1, 10, 2, 7, tzinfo=ZoneInfo("Europe/Rome")).timestamp()
DUE_TIMES = 10
STEP = 300.0  # one due time of "*/5 * * * *" per step


def can_name_hosts() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture(params=["postgres", "redis"])
def periodic_project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    if not can_name_hosts():
        pytest.skip("needs `unshare --uts` (root) to give worker processes their own hostname")
    set_clock(tmp_path, START)
    with isolated_project(request, request.param, tmp_path, TEMPLATE, migrate=False) as project:
        yield project


def set_clock(directory: Path, now: float) -> None:
    staged = directory / "clock.txt.new"
    staged.write_text(repr(now))
    os.replace(staged, directory / "clock.txt")  # a worker never reads half a number


def looked_at(workers: list[WorkerProcess], due: float) -> bool:
    """Every worker has claimed this due time or seen it claimed (its log says which)."""
    return all(due_text(due) in w.log() for w in workers)


def test_three_workers_on_two_hosts_dispatch_each_due_time_once(
    periodic_project: Project,
) -> None:
    project = periodic_project
    name = project.jobs.every_five_minutes.name
    schedule = project.app.periodic_jobs[name].schedule
    args = ("--log-level", "DEBUG", "--lease", "10", "--concurrency", "2")
    workers = [
        project.worker(*args, host="host-a"),
        project.worker(*args, host="host-a"),
        project.worker(*args, host="host-b"),
    ]
    first = schedule.latest_due(START)
    assert first is not None
    wait_until(lambda: looked_at(workers, first), 60, "every worker's first look")
    assert project.ledger.lines() == []  # the first due time seen is recorded, not run
    dues = []
    for step in range(1, DUE_TIMES + 1):
        now = START + step * STEP
        set_clock(project.dir, now)
        due = schedule.latest_due(now)
        assert due is not None and due not in dues
        dues.append(due)
        wait_until(
            lambda d=due: looked_at(workers, d), 60, f"every worker's look at {due_text(due)}"
        )
    ids = [run_id(name, d) for d in dues]
    wait_until(lambda: all(project.app.get_job(i).state == "succeeded" for i in ids), 60, "10 runs")
    runs = collections.Counter(line[0] for line in project.ledger.lines())
    assert runs == dict.fromkeys(ids, 1), "a due time was run twice, or not at all"
    created = [j for j in project.app.list_jobs(limit=1000) if j.name == name]
    assert sorted(j.id for j in created) == sorted(ids), "a due time was dispatched twice"
    hosts = {w.host for w in project.app.live_workers()}
    assert hosts == {"host-a", "host-b"}
    [status] = project.app.periodic_status()
    assert status.last_due == dues[-1] and status.last_job_id == ids[-1]
    assert status.last_state == "succeeded"
    winners = sum(w.log().count(f"{name} dispatched for") for w in workers)
    assert winners == DUE_TIMES

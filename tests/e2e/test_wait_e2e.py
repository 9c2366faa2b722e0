"""Issue 19 with real workers on every backend: JobHandle.wait returns the result a worker's
child (sync job) or event loop (async job) stored with the success, raises with the last error
of a job that failed, and times out while no worker runs; and a worker takes lower priorities
first, FIFO within one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import tenure

from e2e.helpers import Project, isolated_project, wait_until
from e2e.test_backends_e2e import TEMPLATE

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def waiting_project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, TEMPLATE) as project:
        yield project


def test_wait_returns_what_the_worker_stored(waiting_project: Project) -> None:
    jobs = waiting_project.jobs
    sync_handle = jobs.total.dispatch(7)
    async_handle = jobs.async_total.dispatch(8)
    failing = jobs.member.dispatch(3, bad=True)
    with pytest.raises(TimeoutError, match=r"did not end within 0\.2 s; it is queued"):
        sync_handle.wait(timeout=0.2)  # no worker yet
    waiting_project.worker("--concurrency", "2")
    assert sync_handle.wait(timeout=60) == {"order": 7, "total": 70}
    assert asyncio.run(async_handle.wait_async(timeout=60)) == [8, 80]
    with pytest.raises(tenure.JobFailed) as failed:
        failing.wait(timeout=60)
    assert failed.value.error is not None and "ValueError: member 3 is bad" in failed.value.error
    assert waiting_project.app.get_job(sync_handle.id).result == {"order": 7, "total": 70}


def test_a_worker_runs_lower_priorities_first_and_fifo_within_one(
    waiting_project: Project,
) -> None:
    member = waiting_project.jobs.member
    plan = [(n, p) for n, p in enumerate([3, 0, -2, 3, 0, -2, 0])]
    for n, priority in plan:
        member.options(priority=priority).dispatch(n)
    worker = waiting_project.worker("--concurrency", "1", "--burst")
    assert worker.wait(timeout=60) == 0, worker.log()
    ran = [event for _, _, _, event, _ in waiting_project.ledger.lines()]
    expected = [f"member:{n}" for n, _ in sorted(plan, key=lambda np: (np[1], np[0]))]
    assert ran == expected


def test_a_chain_runs_link_after_link_on_real_workers(waiting_project: Project) -> None:
    jobs, app = waiting_project.jobs, waiting_project.app
    done = app.chain(
        [jobs.scale.sig(2, 3), jobs.async_scale.sig(10), jobs.scale.sig(7)],
        finally_=jobs.callback.sig("done"),
        pass_result=True,
    )
    stopped = app.chain(
        [jobs.member.sig(1), jobs.member.sig(2, bad=True), jobs.member.sig(3)],
        catch=jobs.callback.sig("caught"),
        finally_=jobs.callback.sig("finally"),
    )
    batch = app.batch([jobs.member.sig(4), [jobs.member.sig(5), jobs.member.sig(6)]])
    waiting_project.worker("--concurrency", "2")
    assert done.wait(timeout=60) == 420
    with pytest.raises(tenure.JobFailed) as failed:
        stopped.wait(timeout=60)
    assert failed.value.job_id == stopped.links[1].id
    assert app.get_job(stopped.links[2].id).state == "cancelled"
    wait_until(lambda: app.get_batch(batch.id).state == "succeeded", what="the batch to end")
    finals = ("callback:done", "callback:caught", "callback:finally")

    def events() -> list[str]:
        return [event for _, _, _, event, _ in waiting_project.ledger.lines()]

    wait_until(lambda: all(f in events() for f in finals), what="the chains' callbacks")
    events_seen = events()
    scaled = [e for e in events_seen if "scale" in e]
    assert scaled == ["scale:2*3", "async_scale:6*10", "scale:60*7"]
    assert events_seen.index("member:1") < events_seen.index("member:2")
    assert "member:3" not in events_seen
    assert events_seen.index("member:5") < events_seen.index("member:6")
    assert all(events_seen.count(f) == 1 for f in finals)
    info = app.get_batch(batch.id)
    assert (info.jobs, info.done) == (2, 2)

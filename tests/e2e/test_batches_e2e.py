"""Batches with real workers: exactly-once ranges, callbacks once, monotonic progress."""

from __future__ import annotations

import itertools
import time

import pytest

from e2e.helpers import Project, wait_until

pytestmark = pytest.mark.slow


def events(project: Project, prefix: str) -> list[str]:
    return [line[3] for line in project.ledger.lines() if line[3].startswith(prefix)]


def settled(project: Project, batch_id: str) -> bool:
    info = project.app.get_batch(batch_id)
    return info.finished_at is not None


def test_coordinated_batch_of_ten_thousand_runs_every_range_once(project: Project) -> None:
    jobs = project.jobs
    b = project.app.batch_over_ids(
        jobs.export_rows, 1, 500_000, chunk=50, slice_jobs=200, then=jobs.callback.sig("then")
    )
    for _ in range(4):
        project.worker("--concurrency", "2")
    samples: list[float] = []
    deadline = time.monotonic() + 300
    while not settled(project, b.id):
        samples.append(project.app.get_batch(b.id).progress)
        assert time.monotonic() < deadline, "the batch did not finish in 300 s"
        time.sleep(0.1)  # the sampling period the acceptance asks for, not a wait for a result
    info = project.app.get_batch(b.id)
    samples.append(info.progress)
    assert info.state == "succeeded" and info.progress == 1.0
    assert info.total == 10_000 + 50 and info.done == 10_050 and info.failed == 0
    assert all(a <= b for a, b in itertools.pairwise(samples)), "progress went back"
    ranges = events(project, "range:")
    assert len(ranges) == 10_000 and len(set(ranges)) == 10_000
    wait_until(lambda: events(project, "callback:then"), 60, "then to run")
    assert info.then_job_id is not None
    wait_until(lambda: project.app.get_job(info.then_job_id or "").state == "succeeded", 60)
    assert events(project, "callback:") == ["callback:then"]
    print(f"10,000-job batch: {len(samples)} progress samples, monotonic")


@pytest.mark.parametrize("allow_failures", [False, True])
def test_a_failing_member_runs_catch_once_and_then_only_if_allowed(
    project: Project, allow_failures: bool
) -> None:
    jobs = project.jobs
    sigs = [jobs.member.sig(n, bad=(n == 3)) for n in range(6)]
    b = project.app.batch(
        sigs,
        name="with a bad member",
        then=jobs.callback.sig("then"),
        catch=jobs.callback.sig("catch"),
        finally_=jobs.callback.sig("finally"),
        allow_failures=allow_failures,
    )
    worker = project.worker("--burst")
    assert worker.wait(120) == 0
    info = project.app.get_batch(b.id)
    assert info.failed == 1 and info.finished_at is not None
    expected = {"callback:catch", "callback:finally"}
    if allow_failures:
        expected.add("callback:then")
        assert info.state == "succeeded" and info.done == 5
    else:
        assert info.state == "failed"
    callbacks = events(project, "callback:")
    assert sorted(callbacks) == sorted(expected)  # each exactly once


def test_killing_a_worker_mid_batch_still_completes_with_callbacks_once(
    project: Project,
) -> None:
    jobs = project.jobs
    b = project.app.batch_over_ids(
        jobs.slow_rows,
        1,
        2_000,
        chunk=50,
        slice_jobs=10,
        then=jobs.callback.sig("then"),
        finally_=jobs.callback.sig("finally"),
    )
    victim = project.worker("--lease", "2", "--concurrency", "2")
    wait_until(lambda: len(events(project, "range:")) >= 5, 60, "the batch to be under way")
    victim.kill_group()
    project.worker("--lease", "2", "--concurrency", "2")
    wait_until(lambda: settled(project, b.id), 180, "the batch to finish")
    info = project.app.get_batch(b.id)
    assert info.state == "succeeded" and info.done == info.total == 40 + 4
    wait_until(lambda: len(events(project, "callback:")) == 2, 60, "the callbacks")
    assert sorted(events(project, "callback:")) == ["callback:finally", "callback:then"]
    ranges = events(project, "range:")
    assert set(ranges) == {f"range:{lo}-{lo + 49}" for lo in range(1, 2_000, 50)}


def test_cancel_mid_batch_starts_nothing_new(project: Project) -> None:
    jobs = project.jobs
    b = project.app.batch(
        [jobs.slow_rows.sig(n, n) for n in range(200)], finally_=jobs.callback.sig("finally")
    )
    project.worker("--concurrency", "2")
    wait_until(lambda: len(events(project, "range:")) >= 4, 60, "the batch to be under way")
    assert project.app.cancel_batch(b.id)
    cancelled_at = project.app.store.now()  # the store's clock, as attempts are stamped
    wait_until(lambda: settled(project, b.id), 60, "the running members to end")
    started = [
        a.started_at
        for job in project.app.store.list_jobs(limit=1000)
        if job.batch_id == b.id
        for a in project.app.get_job(job.id).attempts
    ]
    assert started and max(started) <= cancelled_at
    info = project.app.get_batch(b.id)
    assert info.state == "cancelled" and info.cancelled > 0
    assert info.done + info.cancelled == 200
    wait_until(lambda: events(project, "callback:finally"), 60, "finally")
    assert not project.app.cancel_batch(b.id)

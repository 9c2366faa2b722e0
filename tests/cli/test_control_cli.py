"""`tenure jobs cancel`, `tenure queue pause|resume` and `tenure queues [--max-wait]` as users
run them, each in a process of its own, on a SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenure
from cli.helpers import run_cli
from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy


@pytest.fixture
def store(tmp_path: Path) -> tenure.App:
    app = tenure.App(f"sqlite:///{tmp_path / 'ops.db'}")
    app.migrate()
    return app


def put(app: tenure.App, job_id: str, queue: str = "default", delay: float = 0.0) -> str:
    job = NewJob(job_id, "send", queue, '{"args":[],"kwargs":{}}', Policy(tries=1), delay)
    app.store.enqueue_many([job])
    return job_id


def test_cancel_a_queued_job_then_again_then_an_unknown_one(
    store: tenure.App, tmp_path: Path
) -> None:
    url = store.url
    put(store, "j-queued")
    done = run_cli("jobs", "cancel", "j-queued", "--url", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "job j-queued cancelled: it will not run" in done.stdout
    assert store.get_job("j-queued").state == "cancelled"
    shown = run_cli("jobs", "show", "j-queued", "--url", url, cwd=tmp_path)
    assert "): cancelled" in shown.stdout and "it will not run again" in shown.stdout
    again = run_cli("jobs", "cancel", "j-queued", "--url", url, cwd=tmp_path)
    assert again.returncode == 1
    assert "was cancelled already" in again.stderr
    unknown = run_cli("jobs", "cancel", "nope", "--url", url, cwd=tmp_path)
    assert unknown.returncode == 1
    assert "no job with id 'nope'" in unknown.stderr


def test_cancel_a_finished_job_is_refused_with_the_reason(
    store: tenure.App, tmp_path: Path
) -> None:
    put(store, "j-done")
    worker = WorkerRef("w-test", "host", 1)
    (r,) = store.store.reserve(queues=["default"], worker=worker, lease=30, limit=1)
    store.store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    refused = run_cli("jobs", "cancel", "j-done", "--url", store.url, cwd=tmp_path)
    assert refused.returncode == 1
    assert "job j-done succeeded at" in refused.stderr
    assert "a finished job cannot be cancelled" in refused.stderr
    assert store.get_job("j-done").state == "succeeded"


def test_cancel_a_running_job_says_its_worker_stops_it(store: tenure.App, tmp_path: Path) -> None:
    put(store, "j-running")
    store.store.reserve(queues=["default"], worker=WorkerRef("w", "h", 1), lease=30, limit=1)
    told = run_cli("jobs", "cancel", "j-running", "--url", store.url, cwd=tmp_path)
    assert told.returncode == 0, told.stderr
    assert "is running: its worker stops it at its next heartbeat" in told.stdout


def test_queues_shows_waits_and_max_wait_exits_1(store: tenure.App, tmp_path: Path) -> None:
    put(store, "a1", queue="mail")
    put(store, "a2", queue="reports", delay=3600)
    shown = run_cli("queues", "--url", store.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line.split() for line in shown.stdout.splitlines() if line.strip()}
    cells = lines["mail"]
    assert cells[:5] == ["mail", "1", "0", "0", "no"]
    assert cells[6] == "s"  # the oldest ready job's age: "1.2 s"
    assert lines["reports"][5] == "-"  # scheduled is not waiting
    generous = run_cli("queues", "--max-wait", "3600", "--url", store.url, cwd=tmp_path)
    assert generous.returncode == 0
    late = run_cli("queues", "--max-wait", "0", "--url", store.url, cwd=tmp_path)
    assert late.returncode == 1
    assert "waited longer than --max-wait 0 s: 'mail'" in late.stderr
    bad = run_cli("queues", "--max-wait", "-1", "--url", store.url, cwd=tmp_path)
    assert bad.returncode == 2


def test_queues_on_an_empty_store_says_so(store: tenure.App, tmp_path: Path) -> None:
    shown = run_cli("queues", "--max-wait", "0", "--url", store.url, cwd=tmp_path)
    assert shown.returncode == 0
    assert "no queue holds a job" in shown.stdout


def test_pause_and_resume_a_queue(store: tenure.App, tmp_path: Path) -> None:
    put(store, "m1", queue="mail")
    paused = run_cli("queue", "pause", "mail", "--url", store.url, cwd=tmp_path)
    assert paused.returncode == 0, paused.stderr
    assert "queue 'mail' paused" in paused.stdout
    assert "holds no job yet" not in paused.stderr
    shown = run_cli("queues", "--url", store.url, cwd=tmp_path)
    assert "paused" in next(line for line in shown.stdout.splitlines() if " mail " in line)
    worker = WorkerRef("w", "h", 1)
    assert store.store.reserve(queues=["mail"], worker=worker, lease=30, limit=1) == []
    resumed = run_cli("queue", "resume", "mail", "--url", store.url, cwd=tmp_path)
    assert resumed.returncode == 0
    assert "queue 'mail' resumed: 1 ready job(s)" in resumed.stdout
    assert len(store.store.reserve(queues=["mail"], worker=worker, lease=30, limit=1)) == 1
    again = run_cli("queue", "resume", "mail", "--url", store.url, cwd=tmp_path)
    assert "was not paused; nothing changed" in again.stdout


def test_pausing_a_queue_with_no_job_yet_is_allowed_and_said(
    store: tenure.App, tmp_path: Path
) -> None:
    paused = run_cli("queue", "pause", "nightly", "--url", store.url, cwd=tmp_path)
    assert paused.returncode == 0, paused.stderr
    assert "holds no job yet; it stays paused when jobs arrive" in paused.stderr
    assert [w.queue for w in store.queue_waits() if w.paused] == ["nightly"]
    empty = run_cli("queue", "pause", "", "--url", store.url, cwd=tmp_path)
    assert empty.returncode == 2
    assert "expected a queue name" in empty.stderr


def test_jobs_show_of_a_link_shows_its_chain(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'chain.db'}")

    @app.job(name="step")
    def step(n: int) -> int:
        return n

    app.migrate()
    chain = app.chain([step.sig(1), step.sig(2)], catch=step.sig(0))
    first, second = (h.id for h in chain.links)
    [held] = app.store.reserve(queues=["default"], worker=WorkerRef("w", "h", 1), lease=30)
    app.store.end_attempt(
        Ending(job_id=held.job_id, token=held.token, outcome="failed", error="boom", permanent=True)
    )
    shown = run_cli("jobs", "show", second, "--url", app.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"chain {chain.id}: link 2 of 2" in out
    assert f"previous {first} (step, failed); next none" in out
    assert f"1. step {first} failed" in out
    assert f"2. step {second} cancelled  <- this job" in out
    assert "catch: step" in out and "queued" in out


def test_jobs_show_of_a_link_not_dispatched_yet_shows_its_chain(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'chain.db'}")

    @app.job(name="step")
    def step(n: int) -> int:
        return n

    app.migrate()
    chain = app.chain([step.sig(1), step.sig(2), step.sig(3)])
    first, _, third = (h.id for h in chain.links)
    shown = run_cli("jobs", "show", third, "--url", app.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"job {third} step: waiting (link 3 of 3 of chain {chain.id}" in out
    assert f"1. step {first} queued" in out
    assert f"3. step {third} waiting  <- this job" in out
    missing = run_cli("jobs", "show", f"{chain.id}.9", "--url", app.url, cwd=tmp_path)
    assert missing.returncode == 1 and "no job with id" in missing.stderr + missing.stdout

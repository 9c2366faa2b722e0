"""Worker options and operations, with real worker processes on the SQLite store."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys

import pytest

from e2e.helpers import SRC, Project, state_is, wait_until

pytestmark = pytest.mark.slow


def outcomes(project: Project, job_id: str) -> list[str | None]:
    return [a.outcome for a in project.app.get_job(job_id).attempts]


def tenure_cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tenure", *args, "--url", project.app.url],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(SRC)},
    )


def test_child_over_the_memory_cap_is_killed_and_the_worker_goes_on(project: Project) -> None:
    worker = project.worker("--memory", "150")
    h = project.jobs.big_memory.dispatch(400)
    wait_until(lambda: outcomes(project, h.id)[:1] == ["crashed"], 60, "the memory kill")
    error = project.app.get_job(h.id).attempts[0].error or ""
    assert "over the worker's --memory 150 MB" in error
    after = project.jobs.noop.dispatch()
    wait_until(state_is(project.app, after.id, "succeeded"), 60, "the next job")
    assert worker.proc.poll() is None


def test_async_jobs_run_and_time_out_under_asyncio_timeout(project: Project) -> None:
    project.worker("--concurrency", "2")
    ok = project.jobs.async_noop.dispatch()
    slow = project.jobs.async_too_slow.dispatch()
    wait_until(state_is(project.app, ok.id, "succeeded"), 60, "the async job")
    wait_until(state_is(project.app, slow.id, "failed"), 60, "the async timeout")
    assert outcomes(project, slow.id) == ["timed_out"]


def test_queues_are_served_in_the_given_order(project: Project) -> None:
    low = project.jobs.noop.dispatch_many([(i,) for i in range(5)])
    high = project.jobs.urgent.dispatch_many([(i,) for i in range(5)])
    worker = project.worker("--queues", "high,default", "--burst")
    assert worker.wait(60) == 0
    order = [line[0] for line in project.ledger.lines()]
    assert set(order[:5]) == {h.id for h in high}
    assert set(order[5:]) == {h.id for h in low}


def test_weighted_queues_serve_default_while_high_is_busy(project: Project) -> None:
    high = project.jobs.urgent.dispatch_many([(i,) for i in range(40)])
    low = project.jobs.noop.dispatch_many([(i,) for i in range(40)])
    worker = project.worker("--queues", "high=3,default=1", "--burst")
    assert worker.wait(120) == 0
    order = [line[0] for line in project.ledger.lines()]
    low_ids = {h.id for h in low}
    assert len(order) == 80 and set(order) == low_ids | {h.id for h in high}
    # strict order would run all 40 high jobs first; 3:1 weights leave default ~1 in 4 turns
    # (none among the first 40: a chance of 0.75**40, about 1e-5)
    assert any(job_id in low_ids for job_id in order[:40])
    bad = project.worker("--queues", "high=0,default")
    assert bad.wait(60) == 2
    assert "expected NAME or NAME=WEIGHT" in bad.log()


def test_max_jobs_exits_after_that_many(project: Project) -> None:
    project.jobs.noop.dispatch_many([(i,) for i in range(5)])
    worker = project.worker("--max-jobs", "3")
    assert worker.wait(60) == 0
    assert project.app.counts()["succeeded"] == 3
    assert project.app.counts()["queued"] == 2


def test_restart_lets_the_running_job_finish_then_exits(project: Project) -> None:
    h = project.jobs.sleep_for.dispatch(2)
    worker = project.worker("--lease", "3", "--grace", "0")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    result = tenure_cli(project, "restart")
    assert result.returncode == 0, result.stderr
    assert "1 live worker(s)" in result.stdout  # the worker it reached, counted
    assert "warning" not in result.stderr
    assert worker.wait(60) == 0
    assert outcomes(project, h.id) == ["succeeded"]
    assert "`tenure restart` requested" in worker.log()


def test_paused_worker_cannot_complete_a_job_whose_lease_was_taken(project: Project) -> None:
    """SIGSTOP past the lease: another worker takes the job; the paused one, continued, is
    refused by the fencing token and its attempt says so."""
    h = project.jobs.sleep_for.dispatch(3)
    paused = project.worker("--lease", "2")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    paused.signal_group(signal.SIGSTOP)
    project.worker("--lease", "2")
    wait_until(
        lambda: [s[1] for s in project.ledger.events(h.id, "start")] == [1, 2],
        60,
        "another worker to take the job",
    )
    paused.signal_group(signal.SIGCONT)
    wait_until(state_is(project.app, h.id, "succeeded"), 60, "the second attempt")
    wait_until(lambda: outcomes(project, h.id)[0] == "lost_lease", 60, "the refusal")
    first = project.app.get_job(h.id).attempts[0]
    assert "refused (fencing)" in (first.error or "")
    assert outcomes(project, h.id) == ["lost_lease", "succeeded"]


def test_worker_stops_an_attempt_whose_lease_it_cannot_renew(project: Project) -> None:
    """The store becomes unreachable (here: locked by another process) for longer than the
    lease: the worker kills the attempt itself before the lease can expire."""
    h = project.jobs.sleep_for.dispatch(20)
    worker = project.worker("--lease", "2")
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    lock = sqlite3.connect(project.app.url.removeprefix("sqlite:///"), isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        wait_until(lambda: "could not renew the lease" in worker.log(), 30, "the guard")
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    wait_until(lambda: outcomes(project, h.id)[:1] == ["lost_lease"], 60, "the record")
    assert not project.ledger.events(h.id, "end")  # the first attempt was stopped


def test_cli_shows_lists_retries_and_forgets(project: Project) -> None:
    h = project.jobs.crash_always.dispatch()
    worker = project.worker()
    wait_until(state_is(project.app, h.id, "failed"), 60, "the job to fail")
    worker.signal(signal.SIGTERM)
    worker.wait(60)
    shown = tenure_cli(project, "jobs", "show", h.id)
    assert shown.returncode == 0, shown.stderr
    assert "attempt 1 crashed" in shown.stdout and "attempt 2 crashed" in shown.stdout
    assert "max_exceptions=2" in shown.stdout
    listed = tenure_cli(project, "failed", "list")
    assert h.id[:8] in listed.stdout
    assert tenure_cli(project, "jobs", "show", "nope").returncode == 1
    retried = tenure_cli(project, "failed", "retry", h.id)
    assert retried.returncode == 0 and project.app.get_job(h.id).state == "queued"
    assert tenure_cli(project, "failed", "forget", h.id).returncode == 1  # not finished now
    assert tenure_cli(project, "failed", "retry", "--all").returncode == 0


def test_metrics_endpoint_counters_move_during_a_run(project: Project) -> None:
    import json
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    worker = project.worker("--metrics-port", str(port))
    url = f"http://127.0.0.1:{port}/metrics"

    def scrape() -> str:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return str(r.read().decode())
        except OSError:
            return ""

    wait_until(scrape, 60, "the metrics endpoint")
    first = project.jobs.noop.dispatch(1)
    wait_until(state_is(project.app, first.id, "succeeded"), 60)
    wait_until(lambda: 'tenure_attempts_total{job="noop",outcome="succeeded"} 1' in scrape(), 30)
    project.jobs.noop.dispatch_many([(i,) for i in range(4)])
    wait_until(
        lambda: 'tenure_attempts_total{job="noop",outcome="succeeded"} 5' in scrape(),
        60,
        "the counter to move to 5",
    )
    page = scrape()
    assert 'tenure_jobs{state="succeeded"} 5' in page
    assert 'tenure_attempt_duration_seconds_count{job="noop"} 5' in page
    assert 'tenure_queue_paused{queue="default"} 0' in page
    project.app.pause_queue("default")
    project.jobs.noop.dispatch(99)  # waits in the paused queue
    wait_until(lambda: 'tenure_queue_paused{queue="default"} 1' in scrape(), 30, "the paused gauge")
    waited = re.search(r'tenure_queue_oldest_ready_seconds\{queue="default"\} ([0-9.]+)', scrape())
    assert waited is not None and float(waited.group(1)) >= 0
    # every log line about a job carries its id and attempt (JSON, as the worker is not a TTY)
    ended = [
        json.loads(line)
        for line in worker.log().splitlines()
        if line.startswith("{") and '"outcome"' in line
    ]
    assert {e["job_id"] for e in ended} >= {first.id}
    assert all("attempt" in e and "outcome" in e for e in ended)

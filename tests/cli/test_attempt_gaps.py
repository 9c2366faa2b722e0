"""`tenure jobs show` explains a gap in a job's attempt numbers (issue 30, rolling deploys):
a worker that does not know a job records its refusal once and hands the job back unrecorded
after that, so the history can read attempts 1 and 5. Run as users run it, in a process of
its own, on a SQLite store; the hand-backs are the worker's own store calls."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import tenure
from cli.helpers import run_cli
from conformance.helpers import wait_until
from tenure.core import causes
from tenure.core.records import Ending, Reservation, WorkerRef

OLD = WorkerRef("w-old", "host-a", 11)
NEW = WorkerRef("w-new", "host-b", 22)


def reserve(app: tenure.App, worker: WorkerRef) -> Reservation:
    got = wait_until(
        lambda: app.store.reserve(queues=["default"], worker=worker, lease=30, limit=1),
        what="the handed-back job to be due again",
    )
    return got[0]


def hand_back(app: tenure.App, res: Reservation, *, record: bool) -> None:
    ended, _ = app.store.end_attempt(
        Ending(
            job_id=res.job_id,
            token=res.token,
            outcome="deferred",
            error=f"worker {OLD.id} does not know job 'report'",
            cause=causes.UNKNOWN_JOB,
            snooze=0.05,
            record=record,
        )
    )
    assert ended.accepted


def test_jobs_show_says_which_attempts_were_unrecorded_hand_backs(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'gaps.db'}")
    app.migrate()
    app.job(name="report")(lambda: None)
    job_id = app.jobs["report"].dispatch().id
    hand_back(app, reserve(app, OLD), record=True)
    for _ in range(2):  # the old worker refuses it again: not written down
        hand_back(app, reserve(app, OLD), record=False)
    last = reserve(app, NEW)  # a worker that knows it runs it
    assert app.store.end_attempt(Ending(job_id=job_id, token=last.token))[0].accepted
    assert [a.number for a in app.get_job(job_id).attempts] == [1, 4]
    shown = run_cli("jobs", "show", job_id, "--url", app.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("  attempt 1 was deferred"))
    assert lines[first + 1] == (
        "  attempts 2 to 3: handed back again by worker w-old, whose code does not know this "
        "job; no try used, not recorded (a worker's refusal of a job is recorded once, not "
        "each round)"
    ), shown.stdout
    assert lines[first + 2].startswith("  attempt 4 succeeded"), shown.stdout
    app.close()


def test_a_gap_no_hand_back_explains_is_not_guessed_at(tmp_path: Path) -> None:
    """A row the store no longer has (deleted by hand here) is said to be missing, not
    blamed on a rolling deploy."""
    app = tenure.App(f"sqlite:///{tmp_path / 'gaps.db'}")
    app.migrate()
    app.job(name="report", tries=3, backoff=0)(lambda: None)
    job_id = app.jobs["report"].dispatch().id
    for _ in range(2):
        res = reserve(app, NEW)
        app.store.end_attempt(
            Ending(job_id=job_id, token=res.token, outcome="failed", error="boom")
        )
    assert app.store.end_attempt(Ending(job_id=job_id, token=reserve(app, NEW).token))[0].accepted
    with sqlite3.connect(tmp_path / "gaps.db") as conn:
        conn.execute("DELETE FROM tenure_attempts WHERE job_id = ? AND number = 2", (job_id,))
    shown = run_cli("jobs", "show", job_id, "--url", app.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "  attempt 2: no record of it in the store" in shown.stdout.splitlines()
    assert "handed back" not in shown.stdout
    app.close()

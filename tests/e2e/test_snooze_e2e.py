"""`raise tenure.Snooze(s)` / `ctx.snooze(s)` inside a job: the attempt ends `deferred`, the
job runs again s seconds later, no try used; in a real worker (sync and async jobs) and in
tenure.testing's drain."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from tenure.testing import drain

from e2e.helpers import SRC

JOBS = """
import tenure

app = tenure.App("sqlite:///{db}")


@app.job(tries=1)
def wait_for_export(marker):
    # snoozes on its first two attempts, then succeeds: tries=1 is never spent on a snooze
    ctx = tenure.current()
    if ctx.attempt < 3:
        ctx.snooze(0.2)
    return marker


@app.job(tries=1)
async def poll_async(marker):
    if tenure.current().attempt < 2:
        raise tenure.Snooze(0.2)
    return marker
"""


def test_a_worker_runs_a_snoozed_job_again_without_using_a_try(tmp_path: Path) -> None:
    (tmp_path / "snoozejobs.py").write_text(JOBS.format(db=tmp_path / "s.db"))
    sys.path.insert(0, str(tmp_path))
    try:
        import snoozejobs

        sync = snoozejobs.wait_for_export.dispatch("a")
        coro = snoozejobs.poll_async.dispatch("b")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}
        done = subprocess.run(
            [sys.executable, "-m", "tenure", "worker", "--app", "snoozejobs:app", "--burst"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        app = snoozejobs.app
        record = app.get_job(sync.id)
        assert record.state == "succeeded" and record.result == "a"
        assert [a.outcome for a in record.attempts] == ["deferred", "deferred", "succeeded"]
        assert record.attempts[0].error == "the job snoozed itself for 0.2 s"
        assert record.tries_used == 1
        later = record.attempts[1].started_at - record.attempts[0].ended_at  # type: ignore[operator]
        assert later >= 0.15  # it waited its snooze
        async_record = app.get_job(coro.id)
        assert [a.outcome for a in async_record.attempts] == ["deferred", "succeeded"]
        app.close()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("snoozejobs", None)


def test_snooze_in_the_test_helpers_and_bad_seconds(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")
    calls: list[int] = []

    @app.job(name="once_snoozed", tries=1)
    def once_snoozed() -> str:
        calls.append(tenure.current().attempt)
        if len(calls) == 1:
            raise tenure.Snooze(60)
        return "done"

    @app.job(name="bad_snooze", tries=1)
    def bad_snooze() -> None:
        raise tenure.Snooze(-1)

    handle = once_snoozed.dispatch()
    bad = bad_snooze.dispatch()
    drain(app)
    record = app.get_job(handle.id)
    assert record.state == "scheduled" and record.tries_used == 0  # due again in 60 s
    failed = app.get_job(bad.id)
    assert failed.state == "failed"
    assert "Snooze: expected seconds > 0, got -1" in (failed.last_error or "")
    app.close()


@pytest.mark.parametrize("seconds", [0, float("nan"), float("inf"), True, "5"])
def test_snooze_refuses_what_is_not_a_positive_time(seconds: object) -> None:
    with pytest.raises((TypeError, ValueError), match="expected seconds > 0"):
        tenure.Snooze(seconds)  # type: ignore[arg-type]

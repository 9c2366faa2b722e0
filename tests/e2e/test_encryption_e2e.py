"""Encrypted jobs and a worker without the key or the package: it refuses to start, naming
what is missing; an attempt that meets a missing key hands the job back (no try used)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenure import App
from tenure.core import payload
from tenure.core.records import Ending, WorkerRef
from tenure.extras import install_line
from tenure.job import Job
from tenure.testing import drain, freeze
from tenure.worker.execute import definition, execute

from e2e.helpers import SRC

JOBS = """
import tenure

app = tenure.App("sqlite:///{db}")


@app.job(encrypted=True, tries=3)
def card_charge(number):
    return number[-4:]


@app.job
def plain():
    return 1
"""


def new_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def start_worker(
    tmp_path: Path, env_extra: dict[str, str], *, without_key: bool = True, path: str = ""
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "secret_jobs.py").write_text(JOBS.format(db=tmp_path / "tenure.db"))
    env = {k: v for k, v in os.environ.items() if k != payload.ENCRYPTION_KEY_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(SRC), str(tmp_path)) if p)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "secret_jobs:app", "--burst"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_without_the_key_refuses_to_start(tmp_path: Path) -> None:
    done = start_worker(tmp_path, {})
    assert done.returncode == 2, done.stderr
    assert "cannot decrypt them: it needs a key in $TENURE_ENCRYPTION_KEY (32 random" in done.stderr
    assert "card_charge" in done.stderr  # the job that needs it, named
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "tenure.db").exists()  # it stopped before touching the store


def test_a_worker_with_a_malformed_key_refuses_to_start(tmp_path: Path) -> None:
    short = base64.urlsafe_b64encode(b"x" * 16).decode()
    done = start_worker(tmp_path, {payload.ENCRYPTION_KEY_ENV: short})
    assert done.returncode == 2, done.stderr
    assert "it needs a valid key in $TENURE_ENCRYPTION_KEY (it holds 16 bytes; expected 32)" in (
        done.stderr
    )


def test_a_worker_without_the_cryptography_package_refuses_to_start(tmp_path: Path) -> None:
    # a `cryptography` that cannot be imported shadows the installed one, as a plain install
    blocker = tmp_path / "blocker" / "cryptography"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('not installed')\n")
    done = start_worker(tmp_path, {payload.ENCRYPTION_KEY_ENV: new_key()}, path=str(blocker.parent))
    assert done.returncode == 2, done.stderr
    assert "'cryptography' package" in done.stderr
    assert f"({install_line('crypto')})" in done.stderr  # the line for this install
    assert "TENURE_ENCRYPTION_KEY" not in done.stderr  # the key is there: only the package


def test_a_worker_with_key_and_package_runs_encrypted_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    monkeypatch.setenv(payload.ENCRYPTION_KEY_ENV, key)
    app = App(f"sqlite:///{tmp_path / 'tenure.db'}")
    charge = app.job(encrypted=True, name="card_charge")(lambda number: number[-4:])
    handle = charge.dispatch("4242424242424242")
    done = start_worker(tmp_path, {payload.ENCRYPTION_KEY_ENV: key})
    assert done.returncode == 0, done.stderr
    record = app.get_job(handle.id)
    assert record.state == "succeeded" and record.result == "4242"
    app.close()


def test_an_attempt_without_the_key_hands_the_job_back_and_the_key_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    monkeypatch.setenv(payload.ENCRYPTION_KEY_ENV, key)
    app = App(f"sqlite:///{tmp_path / 'tenure.db'}")
    charge = app.job(encrypted=True, tries=1, name="charge")(lambda n: n[-4:])
    handle = charge.dispatch("4242424242424242")
    monkeypatch.delenv(payload.ENCRYPTION_KEY_ENV)
    worker = WorkerRef(id="w-test", host="here", pid=os.getpid())
    (res,) = app.store.reserve(queues=["default"], worker=worker, lease=30, limit=1)
    job = definition(app, res, "this test")
    assert isinstance(job, Job)
    ended = execute(app, res, job)
    assert ended.outcome == "deferred" and not ended.permanent and ended.snooze == 30
    assert "TENURE_ENCRYPTION_KEY" in (ended.error or "")
    assert "corrupt" not in (ended.error or "")
    clock = freeze(app)
    app.store.end_attempt(
        Ending(
            job_id=res.job_id,
            token=res.token,
            outcome=ended.outcome,
            error=ended.error,
            snooze=ended.snooze,
        )
    )
    record = app.get_job(handle.id)
    # handed back, not failed though tries=1, and not due at once: this worker would spin
    assert record.state == "scheduled" and record.tries_used == 0
    assert [a.outcome for a in record.attempts] == ["deferred"]
    monkeypatch.setenv(payload.ENCRYPTION_KEY_ENV, key)
    clock.advance(31)
    drain(app)
    record = app.get_job(handle.id)
    assert record.state == "succeeded" and record.result == "4242"
    assert [a.outcome for a in record.attempts] == ["deferred", "succeeded"]
    app.close()

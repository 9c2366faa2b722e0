"""A time limit computed where the task is sent is at least its constant part. Cut from
codalab/codabench: src/apps/competitions/tasks.py sends `compute_worker_run` to the
compute-worker queue with `soft_time_limit=time_limit`, `time_limit =
submission.phase.execution_time_limit + time_padding`, `time_padding = 60 * 20`; the Compose
compute_worker service (`celery -A compute_worker worker -Q compute-worker`) keeps Docker's
10 s grace."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'pyamqp://rabbit//'\n"
SENDER = """from celery import current_app as app


def _send_submission(submission, run_args):
    time_padding = {padding}
    time_limit = {limit}
    app.send_task(
        'compute_worker_run',
        args=(run_args,),
        queue='compute-worker',
        soft_time_limit=time_limit,
    )
"""
WORKER = """from celery import Celery, shared_task

app = Celery()


@shared_task(name="compute_worker_run")
def run_wrapper(run_args):
    return run_args
"""
COMPOSE = """services:
  compute_worker:
    command: ["celery -A compute_worker worker -l info -Q compute-worker -n compute-worker@%n"]
    working_dir: /app
    build: .
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, padding: str, limit: str) -> list[str]:
    write(tmp_path, {"src/settings/base.py": SETTINGS,
                     "src/apps/competitions/tasks.py": SENDER.format(padding=padding, limit=limit),
                     "compute_worker/compute_worker.py": WORKER,
                     "docker-compose.yml": COMPOSE})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="src/settings/base.py")
    return located(report, "celery-grace-below-time-limit")


def test_a_sent_limit_of_a_field_plus_padding_is_at_least_the_padding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = "submission.phase.execution_time_limit + time_padding"
    found = run(tmp_path, monkeypatch, "60 * 20", limit)
    assert [f.split()[1] for f in found] == ["docker-compose.yml:2"]
    assert "at least 1200 s" in found[0]


@pytest.mark.parametrize(
    ("padding", "limit"),
    [("60 * 20", "submission.phase.execution_time_limit"),  # nothing known of it
     ("3", "5 + time_padding"),  # 8 s: within the 10 s grace
     ("60 * 20", "submission.phase.execution_time_limit * time_padding"),  # not a sum
     ("60 * 20", "submission.phase.execution_time_limit - time_padding")],
)  # fmt: skip
def test_quiet_twin_no_floor_above_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, padding: str, limit: str
) -> None:
    assert run(tmp_path, monkeypatch, padding, limit) == []

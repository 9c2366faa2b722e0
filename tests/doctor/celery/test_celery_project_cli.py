"""A worker started through the project's own CLI, whose `celery` sub-command runs Celery
(`hypothesis celery worker`), behind an APM wrapper, as a supervisord program. Cut from
hypothesis/h (conf/supervisord.conf [program:worker], h/tasks/celery.py task_time_limit=240)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write
from tenure.doctor.celery.launches import find_celery
from tenure.doctor.readers.worker_command import split_command

SETTINGS = """import os
from celery import Celery
celery = Celery("h")
celery.conf.update(
    broker_url=os.environ.get("BROKER_URL", "amqp://guest:guest@localhost:5672//"),
    task_time_limit=240,
)
"""
SUPERVISORD = """[supervisord]
nodaemon=true

[program:worker]
command=newrelic-admin run-program hypothesis celery worker --loglevel=INFO
stdout_events_enabled=true
{grace}autostart=%(ENV_ENABLE_WORKER)s
"""


@pytest.mark.parametrize(
    ("grace", "expected"),
    [("", ["conf/supervisord.conf:4"]), ("stopwaitsecs=300\n", [])],  # the quiet twin
)
def test_the_projects_cli_running_celery_is_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"h/tasks/celery.py": SETTINGS,
             "conf/supervisord.conf": SUPERVISORD.format(grace=grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="h/tasks/celery.py")  # fmt: skip
    found = located(report, "celery-grace-below-time-limit")
    assert [f.split(" ")[1] for f in found] == expected


def test_a_printing_or_searching_program_is_no_cli_of_celery() -> None:
    for quiet in ("echo celery worker", "grep celery worker", "log celery worker -l info",
                  "pip show celery worker"):  # fmt: skip
        assert find_celery(split_command(quiet)) is None, quiet
    assert find_celery(split_command("invenio celery worker -l info")) is not None

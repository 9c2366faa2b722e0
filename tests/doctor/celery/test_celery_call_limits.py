"""Limits a task gets where it is sent, and a worker command held in one exec-form word.
Cut from codalab/codabench: `app.send_task('compute_worker_run', soft_time_limit=time_limit)`
(src/apps/competitions/tasks.py; time_limit an expression of the phase's limit), the compute
worker's `@shared_task(name="compute_worker_run")` with no limit of its own, and the
site_worker's `command: ["watchmedo auto-restart -p '*.py' --recursive -- celery ..."]`."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'pyamqp://rabbit:5672//'\n"
SENDER = """from celery import current_app as app

def run_submission(submission):
    time_padding = 60 * 20
    app.send_task('compute_worker_run', args=(1,), queue='compute-worker',
                  soft_time_limit={limit})
"""
WORKER = """from celery import shared_task

@shared_task(name="compute_worker_run")
def run_wrapper(run_args):
    pass
"""
COMPOSE = """services:
  compute_worker:
    command: ["celery -A compute_worker worker -l info -Q compute-worker -n compute-worker@%n"]
    working_dir: /app
"""


@pytest.mark.parametrize(
    ("limit", "rules"),
    [("submission.phase.execution_time_limit", []),  # unknown: neither rule
     # at least the padding (test_celery_sent_limit_floor.py): compared
     ("submission.phase.execution_time_limit + time_padding",
      ["celery-grace-below-time-limit docker-compose.yml:2"]),
     ("60 * 60", ["celery-grace-below-time-limit docker-compose.yml:2"])],  # known: compared
)  # fmt: skip
def test_a_limit_given_where_the_task_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, rules: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "apps/competitions/tasks.py": SENDER.format(limit=limit),
             "compute_worker/compute_worker.py": WORKER, "docker-compose.yml": COMPOSE}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if f.startswith("celery-")]
    assert [f for f in found if "grace" in f or "unbounded" in f] == rules
    if not rules:
        assert any("set where it is sent" in s.reason for s in report.skipped)


SITE = (
    "services:\n  site_worker:\n    command: [\"watchmedo auto-restart -p '*.py' --recursive -- "
    'celery -A celery_config worker -B -Q site-worker"]\n{grace}'
)
SITE_TASKS = """from celery_config import app

@app.task(queue="site-worker", soft_time_limit=60 * 60 * 24)
def create_storage_analytics_snapshot():
    pass
"""


@pytest.mark.parametrize(
    ("grace", "expected"), [("", ["docker-compose.yml:2"]), ("    stop_grace_period: 25h\n", [])]
)
def test_a_command_in_one_exec_form_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "apps/analytics/tasks.py": SITE_TASKS,
             "docker-compose.yml": SITE.format(grace=grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    found = located(report, "celery-grace-below-time-limit")
    assert [f.split(" ")[1] for f in found] == expected

"""The grace check is one finding per worker, naming the task whose own limit is the longest.
Cut from codertheory/shiritori-v1 (backend/shiritori/game/tasks.py: `TASK_TIME_LIMIT = 60 *
60 * 24` on game_worker_task's decorator, shorter tasks beside it; production.yml's
celeryworker service with no stop_grace_period). The quiet twin gives the service a grace
above the longest limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
TASKS = """from celery import shared_task

TASK_TIME_LIMIT = 60 * 60 * 24  # 24 hours


@shared_task(max_retries=3, time_limit=TASK_TIME_LIMIT, soft_time_limit=TASK_TIME_LIMIT)
def game_worker_task(game_id):
    return game_id


@shared_task(time_limit=60)
def player_disconnect_task(player_id):
    return player_id


@shared_task(time_limit=600)
def load_dictionary_task():
    return None
"""
COMPOSE = """services:
  django: &django
    build:
      context: .
      dockerfile: compose/production/django/Dockerfile
    command: /start
  celeryworker:
    <<: *django
    image: backend_production_celeryworker
{grace}    command: celery -A config.celery_app worker -l INFO
"""


def findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str) -> list[str]:
    files = {"settings.py": SETTINGS, "shiritori/game/tasks.py": TASKS,
             "production.yml": COMPOSE.replace("{grace}", grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    return located(report, "celery-grace-below-time-limit")


def test_one_finding_per_worker_naming_the_longest_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = findings(tmp_path, monkeypatch, "")
    assert len(found) == 1, found
    assert found[0].startswith("celery-grace-below-time-limit production.yml:7 ")
    assert "up to 86400 s (task game_worker_task's time_limit)" in found[0]


def test_quiet_twin_grace_above_the_longest_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert findings(tmp_path, monkeypatch, "    stop_grace_period: 25h\n") == []

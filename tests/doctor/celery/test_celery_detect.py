"""`tenure doctor .` on a Celery project finds its settings by itself and says which file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose

BOOKWYRM_SETTINGS = """from bookwyrm.settings import *  # noqa

CELERY_BROKER_URL = env("CELERY_BROKER_URL", "redis://redis_broker:6379/0")
CELERY_DEFAULT_QUEUE = "low_priority"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
"""
CELERY_APP = """import os
from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "celerywyrm.settings")
app = Celery("tasks")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
COMPOSE = """services:
  celery_worker:
    build: .
    command: celery -A celerywyrm worker -l info -Q high_priority
"""


def test_settings_are_found_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in {"celerywyrm/settings.py": BOOKWYRM_SETTINGS,
                       "celerywyrm/celery.py": CELERY_APP,
                       "docker-compose.yml": COMPOSE,
                       "tests/settings.py": BOOKWYRM_SETTINGS}.items():  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)
    assert [f.rule for f in report.findings] == ["celery-task-unbounded"]
    assert report.notes == [
        "Celery settings read from celerywyrm/settings.py (the file that configures Celery "
        "most; choose another with --celery)",
        "Celery: 0 task(s), 1 worker command(s) found: docker-compose.yml:4 (compose)",
    ]
    # Nothing Celery-like: no note, no Celery audit.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "app.py").write_text("print('celery is a vegetable')\n")
    assert diagnose(None, str(plain), history=False).notes == []

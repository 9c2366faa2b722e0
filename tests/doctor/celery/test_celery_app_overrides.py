"""The Celery app module that loads the Django settings (`config_from_object(..., namespace=
"CELERY")`) and then sets `app.conf.<key>` itself: those values win over the settings file."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

RULE = "celery-visibility-below-time-limit"
SETTINGS = """import os

INSTALLED_APPS = ["django.contrib.admin"]
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://redis:6379/0")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
{more}"""
# Cut from blueshack112/what.test backend/src/malx/celery.py: the limits set on app.conf.
MALX = """import os
from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "malx.settings")

app = Celery("malx")

app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(lambda: settings.INSTALLED_APPS)

# Soft time limit raises an error if the tasks takes too long
app.conf.task_soft_time_limit = 60 * 60 * 2  # 2 hours
# Hard time limit will kill the current worker if the tasks takes too long
app.conf.task_time_limit = 60 * 60 * 12  # 12 hours
"""
# Cut from TelegramMiniApps-2023/bestexchange_back django_fastapi/project/celery.py: the
# broker's visibility timeout set on app.conf after loading the settings.
BESTEXCHANGE = """import os

from celery import Celery


os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'project.settings')

app = Celery('project')

app.config_from_object('django.conf:settings', namespace='CELERY')

app.conf.broker_transport_options = {'visibility_timeout': 1800}

app.autodiscover_tasks()
"""


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)  # the settings file is found by itself
    return [f"{f.rule} " + " / ".join(c.text() for c in f.clocks) for f in report.findings
            if f.rule == RULE]  # fmt: skip


def test_time_limit_set_on_app_conf_is_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {"malx/settings.py": SETTINGS.format(more=""),
                           "malx/celery.py": MALX}, monkeypatch)  # fmt: skip
    (line,) = found
    assert "task_time_limit 43200 s (malx/celery.py:15)" in line  # not "has no time limit"


def test_visibility_set_on_app_conf_is_the_visibility(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SETTINGS.format(more="CELERY_TASK_TIME_LIMIT = 2400\n")
    found = run(tmp_path, {"project/settings.py": settings,
                           "project/celery.py": BESTEXCHANGE}, monkeypatch)  # fmt: skip
    (line,) = found  # 2400 s is below Redis's default 3600 s, above the 1800 s set here
    assert "broker visibility_timeout 1800 s (project/celery.py:12)" in line


def test_limit_below_the_visibility_set_on_app_conf_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SETTINGS.format(more="CELERY_TASK_TIME_LIMIT = 1200\n")
    assert run(tmp_path, {"project/settings.py": settings,
                          "project/celery.py": BESTEXCHANGE}, monkeypatch) == []  # fmt: skip

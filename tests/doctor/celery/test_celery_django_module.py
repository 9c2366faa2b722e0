"""The Celery app module of a Django project names its settings module
(`os.environ.setdefault("DJANGO_SETTINGS_MODULE", "onadata.settings.common")`) and loads it
(`config_from_object("django.conf:settings", namespace="CELERY")`): with `--celery` pointing at
the app module, that settings module is read too, so `settings.ZIP_EXPORT_COUNTDOWN` in a task
module is known, while what the app module sets on `app.conf` still wins. Cut from a Django +
Celery data collection server whose app module shortens the visibility timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

APP = """import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "{module}")

app = Celery(__name__)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.conf.broker_transport_options = {{"visibility_timeout": 10}}
"""
COMMON = """CELERY_BROKER_URL = "redis://localhost:6379/1"
CELERY_BROKER_TRANSPORT_OPTIONS = {{"visibility_timeout": 43200}}
ZIP_EXPORT_COUNTDOWN = {countdown}  # 1 hour
"""
TASKS = """from celery import shared_task
from django.conf import settings


@shared_task
def delete_export(export_id):
    return export_id


@shared_task
def create_zip_export(export_id):
    delete_export.apply_async(
        (),
        {"export_id": export_id},
        countdown=settings.ZIP_EXPORT_COUNTDOWN,
    )
"""
ETA = "celery-eta-beyond-visibility"


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, countdown: int = 3600,
        module: str = "onadata.settings.common") -> list[str]:  # fmt: skip
    write(tmp_path, {"onadata/__init__.py": "", "onadata/settings/__init__.py": "",
                     "onadata/celeryapp.py": APP.format(module=module),
                     "onadata/settings/common.py": COMMON.format(countdown=countdown),
                     "onadata/apps/viewer/tasks.py": TASKS})  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="onadata/celeryapp.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == ETA)  # fmt: skip


def test_countdown_from_the_django_settings_module_against_the_apps_visibility(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch)
    assert len(found) == 1
    assert found[0].startswith(f"{ETA} onadata/apps/viewer/tasks.py:12 ")
    assert "3600" in found[0] and "10" in found[0]  # the app module's 10 s, not 43200


def test_countdown_below_the_visibility_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, countdown=5) == []


def test_a_settings_module_that_is_not_in_the_project_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, module="elsewhere.settings") == []

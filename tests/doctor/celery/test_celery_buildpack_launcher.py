"""A Heroku buildpack's launcher (`bin/start-pgbouncer`, `bin/start-nginx`) starts a helper and
execs the command it is given: the Celery worker after it is the Procfile process's worker.
Cut from a course-catalog site's Procfile (pgbouncer, then New Relic, then celery); the quiet
twin is the web process through the same launchers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\nCELERY_TASK_DEFAULT_QUEUE = 'default'\n"
TASKS = "from celery import shared_task\n\n\n@shared_task\ndef import_catalog():\n    pass\n"
WEB = "web: bin/start-nginx bin/start-pgbouncer newrelic-admin run-program uwsgi uwsgi.ini\n"
WORKER = (
    "worker: bin/start-pgbouncer newrelic-admin run-program celery -A shop.celery:app worker "
    "-E -Q spam,default --concurrency=2 -B -l $LOG_LEVEL\n"
)


def run(tmp_path: Path, procfile: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    files = {"settings.py": SETTINGS, "shop/tasks.py": TASKS, "Procfile": procfile}
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings)


def test_celery_behind_a_buildpack_launcher_is_the_process_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, WEB + WORKER, monkeypatch)
    assert found == ["celery-task-unbounded Procfile:2"]


def test_quiet_twin_the_web_process_through_the_same_launchers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, WEB, monkeypatch) == []

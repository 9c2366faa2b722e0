"""A Procfile process or a systemd unit that runs a project script dispatching to the worker
(`worker: bin/start-stunnel bin/run worker`, `ExecStart=/opt/app/bin/run worker`) gives that
worker its stop grace, and the finding goes on the unit (the process line, the `[Service]`
header). Cut from a Heroku-deployed Django app (a Procfile whose processes go through a
buildpack wrapper into `bin/run`, a `case` script that execs celery) whose Compose file is the
development stack (`Dockerfile.dev`, `$PWD:/app`); each layout has a twin that stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

GRACE = "celery-grace-below-time-limit"
SETTINGS = """CELERY_BROKER_URL = 'redis://redis:6379/0'
CELERY_TASK_TIME_LIMIT = {limit}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
"""
PROCFILE = """web: bin/start-stunnel bin/run web
worker: bin/start-stunnel bin/run worker
scheduler: bin/start-stunnel bin/run scheduler
release: bin/pre_deploy
"""
RUN = """#!/usr/bin/env bash
set -eo pipefail
: "${PORT:=8000}"

case $1 in
  web)
    exec gunicorn shop.wsgi:application -b 0.0.0.0:${PORT}
    ;;
  web-dev)
    exec python manage.py runserver 0.0.0.0:${PORT}
    ;;
  worker)
    exec newrelic-admin run-program celery -A shop.celery:celery worker -l info -O fair
    ;;
  scheduler)
    exec celery -A shop.celery:celery beat -l info
    ;;
  *)
    exit 1
    ;;
esac
"""
DEV_COMPOSE = """version: '2'

x-app: &app
  build:
    context: .
    dockerfile: Dockerfile.dev
  env_file:
    - .env
  volumes:
    - $PWD:/app
  command: web-dev

services:
  redis:
    image: redis:3.2

  web:
    <<: *app

  worker:
    <<: *app
    command: worker
"""
UNIT = """[Unit]
Description=Shop Celery worker

[Service]
Type=simple
WorkingDirectory=/opt/shop
ExecStart=/opt/shop/bin/run worker
{stop}Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        limit: int = 600) -> list[str]:  # fmt: skip
    write(tmp_path, {"shop/settings.py": SETTINGS.format(limit=limit), "manage.py": "",
                     "bin/run": RUN, **files})  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="shop/settings.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings
                  if f.rule.startswith("celery-"))  # fmt: skip


def test_procfile_process_running_the_script_gets_the_platform_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {"Procfile": PROCFILE, "docker-compose.yml": DEV_COMPOSE}, monkeypatch)
    assert found == [f"{GRACE} Procfile:2"]  # not the development Compose service


def test_procfile_quiet_when_tasks_end_within_the_platform_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {"Procfile": PROCFILE}, monkeypatch, limit=20)
    assert found == []


def test_procfile_without_a_worker_process_ties_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    procfile = "web: bin/start-stunnel bin/run web\n"
    assert run(tmp_path, {"Procfile": procfile}, monkeypatch) == []


def test_compose_with_a_production_dockerfile_and_no_source_mount_is_a_deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = DEV_COMPOSE.replace("Dockerfile.dev", "Dockerfile").replace(
        "  volumes:\n    - $PWD:/app\n", ""
    )
    found = run(tmp_path, {"docker-compose.yml": compose}, monkeypatch)
    assert found == [f"{GRACE} docker-compose.yml:18"]


def test_systemd_unit_running_the_script_gets_its_default_stop_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {"deploy/shop-worker.service": UNIT.format(stop="")}, monkeypatch,
                limit=3600)  # fmt: skip
    assert found == [f"{GRACE} deploy/shop-worker.service:4"]


def test_systemd_unit_quiet_with_a_stop_timeout_past_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = UNIT.format(stop="TimeoutStopSec=3700\n")
    found = run(tmp_path, {"deploy/shop-worker.service": unit}, monkeypatch, limit=3600)
    assert found == []

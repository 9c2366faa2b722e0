"""A worker started inside an image (Dockerfile CMD/ENTRYPOINT, or a script the image runs)
gets the grace of the Compose service or Kubernetes container running that image: by the
service's build context and Dockerfile, or by image name. Layouts cut from real projects, each
with a twin that must stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
UNBOUNDED = "celery-task-unbounded"


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    for name, text in {"settings.py": SETTINGS, **files}.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings)


# Cut from a Django app whose worker image is its own Dockerfile (CMD in exec form) and whose
# Compose file builds it with a context and a Dockerfile path.
WORKER_DOCKERFILE = """FROM python:3.12-slim
WORKDIR /app
COPY . .
RUN pip install -r requirements.txt
CMD ["celery", "-A", "shop", "worker", "--loglevel=info"]
"""
BUILD_COMPOSE = """services:
  web:
    build: .
    command: gunicorn shop.wsgi
  worker:
    build:
      context: .
      dockerfile: docker/worker/Dockerfile
    stop_grace_period: 45s
"""


def test_dockerfile_cmd_gets_the_grace_of_the_service_building_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(
        tmp_path,
        {"docker/worker/Dockerfile": WORKER_DOCKERFILE, "docker-compose.yml": BUILD_COMPOSE},
        monkeypatch,
    )
    assert found == [f"{UNBOUNDED} docker-compose.yml:9"]


def test_dockerfile_cmd_quiet_when_the_service_runs_its_own_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = BUILD_COMPOSE.replace(
        "    stop_grace_period: 45s\n", "    command: gunicorn shop.wsgi\n"
    )
    found = run(
        tmp_path,
        {"docker/worker/Dockerfile": WORKER_DOCKERFILE, "docker-compose.yml": compose},
        monkeypatch,
    )
    assert found == []


# Cut from an image whose ENTRYPOINT is an entrypoint script copied in, which starts the
# worker; the Compose service builds the image and keeps its entrypoint.
ENTRY_DOCKERFILE = """FROM python:3.11
COPY ./compose/production/django/start-celeryworker /start-celeryworker
RUN sed -i 's/\\r$//g' /start-celeryworker && chmod +x /start-celeryworker
ENTRYPOINT ["/start-celeryworker"]
"""
ENTRY_SCRIPT = """#!/bin/bash

set -o errexit
set -o nounset

exec celery -A config.celery_app worker -l INFO
"""
ENTRY_COMPOSE = """services:
  celeryworker:
    build:
      context: .
      dockerfile: ./compose/production/django/Dockerfile
    image: shop_production_celeryworker
    stop_grace_period: 1m
{extra}"""


def test_script_the_image_runs_gets_the_service_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "compose/production/django/Dockerfile": ENTRY_DOCKERFILE,
        "compose/production/django/start-celeryworker": ENTRY_SCRIPT,
        "production.yml": ENTRY_COMPOSE.format(extra=""),
    }
    assert run(tmp_path, files, monkeypatch) == [f"{UNBOUNDED} production.yml:7"]


def test_script_quiet_when_the_service_replaces_the_entrypoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "compose/production/django/Dockerfile": ENTRY_DOCKERFILE,
        "compose/production/django/start-celeryworker": ENTRY_SCRIPT,
        "production.yml": ENTRY_COMPOSE.format(extra="    entrypoint: /start-web\n"),
    }
    assert run(tmp_path, files, monkeypatch) == []


# Cut from a project that builds its image with Compose and runs it on Kubernetes by name.
K8S = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 60
      containers:
        - name: worker
          image: {image}
"""
IMAGE_COMPOSE = """services:
  app:
    build: .
    image: registry.example.com/shop/app:${TAG:-latest}
    command: gunicorn shop.wsgi
"""


def test_kubernetes_container_running_the_built_image_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "Dockerfile": WORKER_DOCKERFILE,
        "docker-compose.yml": IMAGE_COMPOSE,
        "k8s/worker.yaml": K8S.format(image="registry.example.com/shop/app:1.4.2"),
    }
    assert run(tmp_path, files, monkeypatch) == [f"{UNBOUNDED} k8s/worker.yaml:8"]


def test_kubernetes_container_of_another_image_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "Dockerfile": WORKER_DOCKERFILE,
        "docker-compose.yml": IMAGE_COMPOSE,
        "k8s/worker.yaml": K8S.format(image="registry.example.com/shop/web:1.4.2"),
    }
    assert run(tmp_path, files, monkeypatch) == []


# Cut from an image that runs its Celery worker under supervisord, the config copied in.
SUPERVISORD = """[supervisord]
nodaemon=true

[program:celery]
command=celery -A shop worker -l info
stopwaitsecs=600
stopasgroup=true
"""
SUPERVISED_DOCKERFILE = """FROM python:3.12-slim
COPY deploy/supervisord.conf /etc/supervisor/conf.d/app.conf
CMD ["supervisord", "-c", "/etc/supervisor/conf.d/app.conf"]
"""
LIMITED = SETTINGS + "CELERY_TASK_TIME_LIMIT = 300\n"


@pytest.mark.parametrize(
    ("grace", "found"),
    [
        ("", ["celery-grace-below-time-limit docker-compose.yml:2"]),
        ("    stop_grace_period: 11m\n", []),
    ],
)
def test_supervisord_inside_an_image_gets_the_shorter_container_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, found: list[str]
) -> None:
    compose = f"services:\n  worker:\n    build: .\n{grace}"
    files = {
        "settings.py": LIMITED,
        "deploy/supervisord.conf": SUPERVISORD,
        "Dockerfile": SUPERVISED_DOCKERFILE,
        "docker-compose.yml": compose,
    }
    assert run(tmp_path, files, monkeypatch) == found


# Cut from bram2w/baserow (docker-compose.yml services celery and celery-export-worker, both
# running the backend image with a sub-command of backend/docker/docker-entrypoint.sh, whose
# branches call one start_celery_worker function): one worker per service, each with its grace;
# the beat service's branch calls another function, so it runs no worker.
BASEROW_ENTRYPOINT = """#!/bin/bash
start_celery_worker(){
  exec celery -A baserow worker -l INFO "$@"
}
start_celery_beat(){
  exec celery -A baserow beat -l INFO "$@"
}
case "$1" in
    celery-beat)
        start_celery_beat
    ;;
    celery-worker)
        start_celery_worker -Q celery -n default-worker@%h "${@:2}"
    ;;
    celery-exportworker)
        start_celery_worker -Q export -n export-worker@%h "${@:2}"
    ;;
esac
"""
BASEROW_COMPOSE = """services:
  celery:
    image: baserow/backend:1.35.3
    command: celery-worker
    stop_grace_period: {celery}
  celery-export-worker:
    image: baserow/backend:1.35.3
    command: celery-exportworker
    stop_grace_period: {export}
  celery-beat-worker:
    image: baserow/backend:1.35.3
    command: celery-beat
"""
HOUR_LIMIT = SETTINGS + "CELERY_TASK_TIME_LIMIT = 1800\nCELERY_WORKER_PREFETCH_MULTIPLIER = 1\n"


def test_each_service_running_the_script_is_checked_with_its_own_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"settings.py": HOUR_LIMIT, "backend/docker/docker-entrypoint.sh": BASEROW_ENTRYPOINT,
             "docker-compose.yml": BASEROW_COMPOSE.format(celery="2h", export="30s")}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    (only,) = report.findings
    assert only.rule == "celery-grace-below-time-limit"
    assert "run by Compose service celery-export-worker" in only.message


def test_each_service_running_the_script_quiet_when_both_wait_long_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = BASEROW_COMPOSE.format(celery="2h", export="2h")
    found = run(tmp_path, {"settings.py": HOUR_LIMIT, "docker-compose.yml": compose,
                           "backend/docker/docker-entrypoint.sh": BASEROW_ENTRYPOINT},
                monkeypatch)  # fmt: skip
    assert found == []

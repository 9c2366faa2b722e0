"""A development Compose service is not a deployment: decided from a reviewer's evidence (a
development-only command in the file, or two hints on the service), with quiet twins where a
deployed file carries one hint only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
TASKS = "from celery import shared_task\n\n\n@shared_task\ndef mail():\n    pass\n"


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    for name, text in {"settings.py": SETTINGS, "app/tasks.py": TASKS, **files}.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings)


# Cut from a Django app's docker-compose.yml: the web service is Django's own dev server,
# started through django-admin rather than manage.py.
RUNSERVER = """services:
  app:
    build: .
    command: >
      /bin/bash -c "
        django-admin migrate &&
        django-admin runserver 0.0.0.0:8000
      "
  celery:
    build: .
    command: celery --app=app.celery:app worker -l INFO --concurrency=3
"""
GUNICORN = RUNSERVER.replace("django-admin runserver 0.0.0.0:8000", "gunicorn app.wsgi")


def test_runserver_by_any_launcher_makes_the_file_development(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, {"docker-compose.yml": RUNSERVER}, monkeypatch) == []


def test_quiet_twin_the_same_file_serving_with_gunicorn_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {"docker-compose.yml": GUNICORN}, monkeypatch)
    assert found == ["celery-task-unbounded docker-compose.yml:9"]


# Cut from a suite of Django apps' compose.yaml: a `celery-dev` service on the development
# image, its env files under env.d/development, the backend source mounted over /app.
NAMED = """services:
  celery-dev:
    image: drive:backend-development
    command: ["celery", "-A", "app.celery_app", "worker", "-l", "DEBUG"]
    environment:
      - DJANGO_CONFIGURATION=Development
    env_file:
      - env.d/development/common
    volumes:
      - ./src/backend:/app
"""
# The quiet twin: a self-hosting file that mounts the source for easy updates (one hint).
MOUNTED = """services:
  site_worker:
    image: site-worker
    command: ["celery", "-A", "app.celery_app", "worker", "-l", "info"]
    env_file: .env
    volumes:
      - ./src/backend:/app
"""


def test_a_service_named_and_mounted_for_development_is_not_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"compose.yaml": NAMED, "src/backend/manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == []


def test_quiet_twin_a_source_mount_alone_is_still_a_deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"compose.yaml": MOUNTED, "src/backend/manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == ["celery-task-unbounded compose.yaml:2"]


# Cut from an event-management app's docker-compose.yml: the package mounted into the image's
# source tree and DEBUG on, through a shared anchor.
DEBUG_MOUNTED = """services:
  backend:
    build: .
    command: python manage.py docker_start
    volumes: &volumes
      - ./app:/usr/src/app/app
    environment: &environment
      DEBUG: 1
      BROKER_URL: redis://redis/1
  celery:
    build: .
    command: celery -A app.celery_app:app worker
    volumes: *volumes
    environment: *environment
"""


def test_debug_on_and_the_package_mounted_is_development(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker-compose.yml": DEBUG_MOUNTED, "app/__init__.py": ""}
    assert run(tmp_path, files, monkeypatch) == []


def test_quiet_twin_debug_on_with_a_data_mount_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = DEBUG_MOUNTED.replace("./app:/usr/src/app/app", "./media:/usr/src/app/media")
    files = {"docker-compose.yml": compose, "media/logo.png": ""}
    assert run(tmp_path, files, monkeypatch) == ["celery-task-unbounded docker-compose.yml:10"]


# Cut from a patient portal's docker/: a base file defines the worker service, a production
# overlay changes its command (nice, queues) and leaves its stop grace alone.
BASE = """services:
  celeryworker:
    image: "${IMAGE_NAMESPACE:-portal}/portal:${DOCKER_IMAGE_TAG:-latest}"
    command: celery --app portal.celery_worker.celery worker --loglevel info
"""
OVERLAY = """services:
  celeryworker:
    restart: unless-stopped
    environment:
      CELERYD_MAX_TASKS_PER_CHILD: 10
    command: sh -c 'nice celery --app portal.celery_worker.celery worker --loglevel debug'
"""


def test_an_overlay_that_changes_only_the_command_is_the_base_files_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker/docker-compose.yaml": BASE, "docker/docker-compose.prod.yaml": OVERLAY}
    assert run(tmp_path, files, monkeypatch) == [
        "celery-task-unbounded docker/docker-compose.yaml:2"
    ]


def test_quiet_twin_an_overlay_that_sets_its_own_grace_is_a_unit_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overlay = OVERLAY.replace("    restart:", "    stop_grace_period: 30s\n    restart:")
    files = {"docker/docker-compose.yaml": BASE, "docker/docker-compose.prod.yaml": overlay}
    assert run(tmp_path, files, monkeypatch) == [
        "celery-task-unbounded docker/docker-compose.prod.yaml:3",
        "celery-task-unbounded docker/docker-compose.yaml:2",
    ]


# Cut from a threat-intel platform's docker/multi-queue.override.yml: a worker named for the
# "local" queue it serves, with a folder of configuration files (some of them .py) mounted.
LOCAL_QUEUE = """services:
  celery_worker_local:
    image: intelowl/intelowl:v6
    restart: unless-stopped
    volumes:
      - ../configuration:/opt/deploy/app/configuration
    command: celery -A app worker -Q local
"""


def test_quiet_twin_a_queue_named_local_and_a_config_mount_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The analyzers' task is routed to the `local` queue the worker reads.
    analyzer = "from celery import shared_task\n\n@shared_task(queue='local')\ndef run(): ...\n"
    files = {"docker/multi-queue.override.yml": LOCAL_QUEUE, "app/analyzers.py": analyzer,
             "configuration/ldap_config.py": "AUTH_LDAP_SERVER_URI = ''\n"}  # fmt: skip
    found = run(tmp_path, files, monkeypatch)
    assert found == ["celery-task-unbounded docker/multi-queue.override.yml:2"]


# Cut from a video-conferencing suite's compose.yml: a `celery-dev` service (development image,
# source mounted) and a `celery` on the production image for demos, both reading the
# development environment's env files.
TWINS = """services:
  celery-dev:
    image: meet:backend-development
    command: ["celery", "-A", "app.celery_app", "worker", "-l", "DEBUG"]
    environment:
      - DJANGO_CONFIGURATION=Development
    env_file:
      - env.d/development/common
    volumes:
      - ./src/backend:/app
  celery:
    image: meet:backend-production
    command: ["celery", "-A", "app.celery_app", "worker", "-l", "INFO"]
    environment:
      - DJANGO_CONFIGURATION=Demo
    env_file:
      - {env}
"""


def test_a_service_on_the_development_env_files_of_a_dev_service_is_development(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = TWINS.format(env="env.d/development/common")
    files = {"compose.yml": compose, "src/backend/manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == []


def test_quiet_twin_the_same_service_on_its_own_env_file_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"compose.yml": TWINS.format(env=".env"), "src/backend/manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == ["celery-task-unbounded compose.yml:11"]


# Cut from a course-catalog site's docker-compose.yml: `DEV_ENV: 'True'` in the shared
# environment and the checkout mounted over /app.
DEV_ENV = """x-environment: &py-environment
  DEBUG: 'False'
  DEV_ENV: '{on}'
services:
  celery:
    build: .
    environment: *py-environment
    env_file: .env
    command: celery -A app.celery:app worker -l INFO
    volumes:
      - .:/app
"""


def test_dev_env_on_and_the_source_mounted_is_development(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker-compose.yml": DEV_ENV.format(on="True"), "manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == []


def test_quiet_twin_dev_env_off_with_the_source_mounted_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker-compose.yml": DEV_ENV.format(on="False"), "manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == ["celery-task-unbounded docker-compose.yml:5"]


# Cut from a legal-opinions site's docker/app/docker-compose.yml: the checkout mounted through a
# variable that defaults to the repository root, with the development env file.
VARIABLE_MOUNT = """services:
  cl-celery:
    build:
      context: "${{CL_BASE_DIR:-../../}}"
      dockerfile: "./docker/django/Dockerfile"
    command: celery -A app.celery:app worker
    volumes:
      - {mount}
    env_file:
      - ../../.env.dev
"""


def test_the_checkout_mounted_through_a_variable_default_is_development(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = VARIABLE_MOUNT.format(mount="${CL_BASE_DIR:-../../}:/opt/app")
    files = {"docker/app/docker-compose.yml": compose, "manage.py": ""}
    assert run(tmp_path, files, monkeypatch) == []


def test_quiet_twin_a_data_folder_through_a_variable_default_is_deployed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = VARIABLE_MOUNT.format(mount="${DATA_DIR:-../../data}:/data")
    files = {"docker/app/docker-compose.yml": compose, "manage.py": "", "data/a.csv": ""}
    found = run(tmp_path, files, monkeypatch)
    assert found == ["celery-task-unbounded docker/app/docker-compose.yml:2"]

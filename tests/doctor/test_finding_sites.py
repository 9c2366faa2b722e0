"""Where a stop-grace finding goes (bench/doctor_corpus/CONVENTION.md): on the line that sets
the too-short grace when the deployment sets one, else on the unit the platform stops (the
Compose service's key, the container's `- name:`, `[program:x]`, `[Service]`), never on the
worker's command, its script or a job."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, write
from tenure.doctor import diagnose

# Cut from bookwyrm-social/bookwyrm docker-compose.yml (celery_worker) and
# celerywyrm/settings.py; the stop_grace_period is the one a production overlay would add.
SETTINGS = "CELERY_BROKER_URL = 'redis://redis_broker:6379/0'\nCELERY_TASK_TIME_LIMIT = 6 * 60\n"
COMPOSE = """services:
  web:
    build: .
    command: gunicorn bookwyrm.wsgi:application --bind 0.0.0.0:8000
  celery_worker:
    env_file: .env
    build: .
{grace}    command: celery -A celerywyrm worker --pool=threads --concurrency=20 -l info
"""
# Cut from a Kubernetes worker Deployment (grafana/oncall's helm output, rendered).
K8S = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: celery
spec:
  template:
    spec:
{grace}      containers:
        - name: celery
          image: oncall:latest
          args: ["celery", "-A", "engine", "worker", "-l", "info"]
"""
# Cut from a Laravel project's supervisord.conf (queue:work under supervisord).
SUPERVISORD = """[supervisord]
nodaemon=true

[program:laravel-worker]
process_name=%(program_name)s_%(process_num)02d
command=php /var/www/artisan queue:work redis --sleep=3 --tries=3 --timeout=120
{grace}numprocs=2
"""
QUEUE = """<?php
return ['default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => ['redis' => ['driver' => 'redis', 'retry_after' => 300]]];
"""


def celery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[str]:
    write(tmp_path, {"settings.py": SETTINGS, **files})
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return [line.split(" ", 2)[1] for line in located(report)]


def test_compose_grace_set_too_short_is_reported_on_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = COMPOSE.format(grace="    stop_grace_period: 1m\n")
    assert celery(tmp_path, monkeypatch, {"docker-compose.yml": short}) == ["docker-compose.yml:8"]
    default = COMPOSE.format(grace="")  # Compose's 10 s: the service's key line
    assert celery(tmp_path, monkeypatch, {"docker-compose.yml": default}) == [
        "docker-compose.yml:5"
    ]


def test_compose_grace_above_the_limit_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = COMPOSE.format(grace="    stop_grace_period: 7m\n")
    assert celery(tmp_path, monkeypatch, {"docker-compose.yml": long}) == []


def test_kubernetes_grace_on_its_line_else_on_the_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = K8S.format(grace="      terminationGracePeriodSeconds: 60\n")
    assert celery(tmp_path, monkeypatch, {"k8s/celery.yaml": short}) == ["k8s/celery.yaml:8"]
    default = K8S.format(grace="")  # Kubernetes' 30 s: the worker container's `- name:`
    assert celery(tmp_path, monkeypatch, {"k8s/celery.yaml": default}) == ["k8s/celery.yaml:9"]
    long = K8S.format(grace="      terminationGracePeriodSeconds: 600\n")
    assert celery(tmp_path, monkeypatch, {"k8s/celery.yaml": long}) == []


@pytest.mark.parametrize(
    ("grace", "expected"),
    [("stopwaitsecs=60\n", ["laravel-grace-below-job-timeout supervisord.conf:7"]),
     ("", ["laravel-grace-below-job-timeout supervisord.conf:4"]),  # [program:laravel-worker]
     ("stopwaitsecs=150\n", [])],  # the quiet twin: it waits past the 120 s timeout
)  # fmt: skip
def test_supervisord_grace_on_stopwaitsecs_else_on_the_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"artisan": "<?php\n", "composer.json": "{}\n", "config/queue.php": QUEUE,
             "supervisord.conf": SUPERVISORD.format(grace=grace)}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)
    found = [" ".join(line.split(" ", 2)[:2]) for line in located(report)]
    assert [f for f in found if "grace" in f] == expected


# Cut from bram2w/baserow: the image's entrypoint starts the worker, and the same service is
# in docker-compose.yml and in its docker-compose.no-caddy.yml variant: two deployments to
# choose from, each said on its own file.
ENTRYPOINT = """#!/bin/bash
case "$1" in
  celery-worker)
    exec celery -A baserow worker -l INFO -Q celery
    ;;
esac
"""
SERVICE = """services:
  {web}:
    build: {{context: ., dockerfile: docker/Dockerfile}}
    command: gunicorn
  celery:
    build: {{context: ., dockerfile: docker/Dockerfile}}
{grace}    command: celery-worker
"""
DOCKERFILE = (
    'FROM python:3.11\nCOPY docker/docker-entrypoint.sh /\nENTRYPOINT ["/docker-entrypoint.sh"]\n'
)


@pytest.mark.parametrize(
    ("grace", "expected"),
    [("", ["docker-compose.no-caddy.yml:5", "docker-compose.yml:5"]),
     ("    stop_grace_period: 7m\n", [])],
)  # fmt: skip
def test_a_service_in_each_compose_variant_is_reported_on_its_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"docker/docker-entrypoint.sh": ENTRYPOINT, "docker/Dockerfile": DOCKERFILE,
             "docker-compose.no-caddy.yml": SERVICE.format(web="backend", grace=grace),
             "docker-compose.yml": SERVICE.format(web="web", grace=grace)}  # fmt: skip
    assert sorted(celery(tmp_path, monkeypatch, files)) == expected


# Cut from bram2w/baserow backend/docker/docker-entrypoint.sh: each case branch picks its
# queues inside an `if` on an environment switch, and calls one shared start function.
SWITCHED = """#!/bin/bash
start_celery_worker(){
  exec celery -A baserow worker -l INFO "$@"
}
case "$1" in
    celery-worker)
      if [[ -n "${BASEROW_RUN_MINIMAL}" ]]; then
        start_celery_worker -Q celery,export
      else
        start_celery_worker -Q celery
      fi
    ;;
    celery-exportworker)
      if [[ -n "${BASEROW_RUN_MINIMAL}" ]]; then
        while true; do sleep 2073600; done
      else
        start_celery_worker -Q export
      fi
    ;;
    web)
      if [ "$2" = "debug" ]; then
        exec gunicorn --reload
      else
        exec gunicorn
      fi
    ;;
esac
"""
RUNNERS = """services:
  celery-export-worker:
    build: {{context: ., dockerfile: docker/Dockerfile}}
{grace}    command: {command}
"""


@pytest.mark.parametrize(
    ("command", "grace", "expected"),
    [("celery-exportworker", "", ["docker-compose.yml:2"]),
     ("celery-exportworker", "    stop_grace_period: 7m\n", []),
     ("web", "", [])],  # the web branch's else arm does not reach the worker: quiet twin
)  # fmt: skip
def test_the_else_arm_of_an_environment_switch_is_in_its_case_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, grace: str, expected: list[str]
) -> None:
    files = {"docker/docker-entrypoint.sh": SWITCHED, "docker/Dockerfile": DOCKERFILE,
             "docker-compose.yml": RUNNERS.format(grace=grace, command=command)}  # fmt: skip
    assert celery(tmp_path, monkeypatch, files) == expected

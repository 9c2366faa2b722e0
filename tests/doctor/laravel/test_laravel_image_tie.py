"""A Laravel worker started inside an image (an entrypoint script's `worker)` branch, a
Dockerfile CMD) gets the stop grace of the Compose service that runs the image, found by its
build or by image name; the branch the service's command picks must be the worker's."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, located
from tenure.doctor.shell_dispatch import branch_labels, reaching_labels

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => 'default',
            'retry_after' => 120,
        ],
    ],
];
"""
# Cut from dabeastnet/bookstack (Dockerfile, docker/entrypoint.sh, docker-compose.yml): one
# image whose ENTRYPOINT script dispatches on web/worker/scheduler; the worker service runs the
# image the web service builds, by name, with `command: worker` and Compose's 10 s grace.
DOCKERFILE = """FROM php:8.3-fpm-alpine AS runtime
WORKDIR /var/www/bookstack
COPY docker/entrypoint.sh /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
CMD ["web"]
"""
ENTRYPOINT = """#!/usr/bin/env bash
set -euo pipefail
php artisan config:cache
case "$1" in
    web)
        exec /usr/bin/supervisord -c /etc/supervisord.conf
        ;;
    worker)
        exec php artisan queue:work --sleep=3 --tries=3 --timeout=90
        ;;
    scheduler)
        exec php artisan schedule:work --verbose --no-interaction
        ;;
    *)
        exec "$@"
        ;;
esac
"""
COMPOSE = """services:
  bookstack:
    build:
      context: .
      dockerfile: Dockerfile
    image: bookstack-local:latest
    command: web
    stop_grace_period: {web}
  worker:
    image: bookstack-local:latest
    command: worker
{worker_grace}  scheduler:
    image: bookstack-local:latest
    command: scheduler
"""


def run(tmp_path: Path, compose: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "Dockerfile": DOCKERFILE, "docker/entrypoint.sh": ENTRYPOINT,
             "docker-compose.yml": compose}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return located(report)


def test_entrypoint_worker_branch_gets_the_grace_of_the_service_choosing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The web service's long grace must not be taken for the worker's: `web)` runs nginx.
    (found,) = run(tmp_path, COMPOSE.format(web="5m", worker_grace=""), monkeypatch)
    assert found.startswith("laravel-grace-below-job-timeout docker-compose.yml:9 ")
    assert "run by Compose service worker" in found and "10 s after SIGTERM" in found


def test_entrypoint_worker_quiet_when_its_service_waits_long_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = COMPOSE.format(web="10s", worker_grace="    stop_grace_period: 2m\n")
    assert run(tmp_path, compose, monkeypatch) == []


# Cut from bram2w/baserow backend/docker/docker-entrypoint.sh: the worker's exec is in a
# function that a later `celery-worker)` branch calls, below an earlier case of its own.
BASEROW = """case "$1" in
    backend)
        echo backend
    ;;
esac
start_celery_worker(){
  startup_plugin_setup
  exec celery -A baserow worker "${EXTRA_CELERY_ARGS[@]}" -l INFO "$@"
}
case "$1" in
    celery-worker)
        start_celery_worker -Q celery
    ;;
esac
"""


def test_branch_of_a_line_in_a_case_and_in_a_function() -> None:
    assert branch_labels(ENTRYPOINT, 9) == {"worker"}
    assert branch_labels(ENTRYPOINT, 3) == set()  # before the case
    assert branch_labels(BASEROW, 8) == set()  # a function's body: any branch may call it
    assert reaching_labels(BASEROW, 8) == {"celery-worker"}  # the branch calling it


# supervisord.conf copied into the image: php-fpm and nginx programs as in dabeastnet/bookstack
# docker/supervisord.conf, and the queue worker program of Laravel's docs (queues#supervisor-
# configuration, stopwaitsecs=3600). Only the worker program is a worker, and the container's
# Compose grace ends it long before its own stopwaitsecs.
SUPERVISORD = """[supervisord]
nodaemon=true

[program:php-fpm]
command=/usr/local/sbin/php-fpm --nodaemonize
autostart=true

[program:nginx]
command=/usr/sbin/nginx -g 'daemon off;'

[program:laravel-worker]
process_name=%(program_name)s_%(process_num)02d
command=php /var/www/html/artisan queue:work redis --sleep=3 --tries=3 --max-time=3600 --timeout=60
autostart=true
autorestart=true
stopasgroup=true
killasgroup=true
numprocs=8
stopwaitsecs=3600
"""
SUPERVISED_IMAGE = """FROM php:8.3-fpm-alpine
COPY docker/supervisord.conf /etc/supervisord.conf
CMD ["/usr/bin/supervisord", "-c", "/etc/supervisord.conf"]
"""
APP_COMPOSE = """services:
  app:
    build: .
{grace}"""


@pytest.mark.parametrize(
    ("grace", "expected"),
    [("", ["laravel-grace-below-job-timeout docker-compose.yml:2"]),
     ("    stop_grace_period: 90s\n", [])],
)  # fmt: skip
def test_supervisord_worker_program_inside_the_image_gets_the_container_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"config/queue.php": QUEUE,
             "Dockerfile": SUPERVISED_IMAGE, "docker/supervisord.conf": SUPERVISORD,
             "docker-compose.yml": APP_COMPOSE.format(grace=grace)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    assert [f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings] == expected


GRACE = "laravel-grace-below-job-timeout"


def _runner(message: str) -> str:
    return message.split("(", 1)[1].split(")")[0]


# Cut from InScrompT/formzend (docker/start.sh, docker-compose.yml: the app service builds
# docker/app.Dockerfile): one image whose start script picks its role from CONTAINER_ROLE;
# the queue service runs the same image with CONTAINER_ROLE=queue.
START = """#!/usr/bin/env sh

set -e

role=${CONTAINER_ROLE:-app}
env=${APP_ENV:-production}

if [ "$env" != "local" ]; then
    echo "Caching configuration..."
    (php artisan config:cache && php artisan route:cache && php artisan view:cache)
fi

if [ "$role" = "app" ]; then
    exec php-fpm
elif [ "$role" = "queue" ]; then
    php artisan queue:work --verbose --tries=3 --timeout=90
else
    echo "Could not match the container role \\"$role\\""
    exit 1
fi
"""
APP_DOCKERFILE = """FROM php:8.2-fpm-alpine
COPY docker/start.sh /usr/local/bin/start
RUN chmod u+x /usr/local/bin/start
CMD ["/usr/local/bin/start"]
"""
ROLE_COMPOSE = """services:
  app:
    build:
      context: .
      dockerfile: docker/app.Dockerfile
    image: docker.pkg.github.com/inscrompt/formzend/app:edge
    stop_grace_period: 5m
  queue:
    image: docker.pkg.github.com/inscrompt/formzend/app:edge
    environment:
      CONTAINER_ROLE: {role}
"""


@pytest.mark.parametrize(
    ("role", "expected"),
    [("queue", [f"{GRACE} docker-compose.yml:8 (run by Compose service queue)"]),
     ("scheduler", [])],
)  # fmt: skip
def test_role_chosen_by_the_service_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str, expected: list[str]
) -> None:
    files = {"config/queue.php": QUEUE,
             "docker/start.sh": START, "docker/app.Dockerfile": APP_DOCKERFILE,
             "docker-compose.yml": ROLE_COMPOSE.format(role=role)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    found = [f"{f.rule} {f.location.path}:{f.location.line} ({_runner(f.message)})"
             for f in report.findings]  # fmt: skip
    # The app service (5 min grace) runs the `app` branch: its grace is never the worker's.
    assert found == expected

"""`'default' => env('QUEUE_CONNECTION', 'sync')` with no env source setting it: the config
default is what runs. Said, with where the value came from, when there are jobs and a
production to run them in; quiet when an environment sets the connection or says local."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project

# config/queue.php as laravel/laravel 10.x ships it (the sync default of Laravel <= 10).
QUEUE = """<?php

return [

    'default' => env('QUEUE_CONNECTION', 'sync'),

    'connections' => [
        'sync' => [
            'driver' => 'sync',
        ],
        'database' => [
            'driver' => 'database',
            'table' => 'jobs',
            'queue' => 'default',
            'retry_after' => 90,
            'after_commit' => false,
        ],
        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => 90,
            'block_for' => null,
            'after_commit' => false,
        ],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Foundation\\Bus\\Dispatchable;
use Illuminate\\Queue\\InteractsWithQueue;

class ExportBook implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $timeout = 30;

    public function handle(): void
    {
    }
}
"""
# The worker service of dabeastnet/bookstack's docker-compose.yml (the image the app service
# builds, run with its own environment), with APP_ENV production.
COMPOSE = """services:
  bookstack:
    build:
      context: .
    image: bookstack-local:latest
    environment:
      APP_ENV: production
      DB_HOST: db
{connection}  worker:
    image: bookstack-local:latest
    environment:
      APP_ENV: production
      DB_HOST: db
{connection}    command: php artisan queue:work --sleep=3 --tries=3 --timeout=25
    stop_grace_period: 60s
"""


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    base = {"config/queue.php": QUEUE, "app/Jobs/ExportBook.php": JOB}
    report = laravel_project(tmp_path, {**base, **files}, monkeypatch)
    # Infos (no worker found) are summaries, not claims.
    return [f"{f.rule} {f.location} {f.message}" for f in report.findings if f.severity != "info"]


def test_worker_deployed_and_the_connection_only_the_sync_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, {"docker-compose.yml": COMPOSE.format(connection="")}, monkeypatch)
    assert found.startswith("laravel-queue-sync config/queue.php:5 ")
    assert "no environment source sets QUEUE_CONNECTION" in found
    assert "docker-compose.yml (service worker)" in found  # where it looked
    assert "runs queue:work" in found


def test_quiet_when_the_deployment_sets_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = COMPOSE.format(connection="      QUEUE_CONNECTION: redis\n")
    assert run(tmp_path, {"docker-compose.yml": compose}, monkeypatch) == []


def test_production_env_file_without_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = "APP_NAME=BookStack\nAPP_ENV=production\nDB_HOST=localhost\n"
    (found,) = run(tmp_path, {".env.example": env}, monkeypatch)
    assert found.startswith("laravel-queue-sync config/queue.php:5 ")
    assert ".env.example sets APP_ENV=production" in found


def test_local_env_file_without_the_connection_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = "APP_NAME=BookStack\nAPP_ENV=local\nDB_HOST=localhost\n"
    assert run(tmp_path, {".env.example": env}, monkeypatch) == []


# crater-invoice's .env.example: the old key beside a config that reads the new one.
OLD_KEY = "APP_ENV=production\nAPP_DEBUG=true\nBROADCAST_DRIVER=log\nQUEUE_DRIVER=sync\n"


def test_old_key_in_env_file_is_read_by_nothing_the_default_is_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, {".env.example": OLD_KEY}, monkeypatch)
    assert found.startswith("laravel-queue-sync config/queue.php:5 ")
    assert ".env.example writes QUEUE_DRIVER=sync, a name config/queue.php does not read" in found


def test_old_key_beside_the_read_key_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = OLD_KEY + "QUEUE_CONNECTION=redis\n"
    assert run(tmp_path, {".env.example": env}, monkeypatch) == []


# linkace's .env.docker.production: a deployed env file that writes no APP_ENV runs as
# config/app.php's default, production.
DEPLOYED = "DB_CONNECTION=mysql\nDB_HOST=db\nREDIS_HOST=redis\n"


def test_deployed_env_file_without_app_env_runs_as_production(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, {".env.docker.production": DEPLOYED}, monkeypatch)
    assert found.startswith("laravel-queue-sync config/queue.php:5 ")
    assert ".env.docker.production runs as APP_ENV=production" in found


def test_example_env_file_without_app_env_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, {".env.example": DEPLOYED}, monkeypatch) == []


# osu-web's compose.yaml: a browser-test service (named for it, the source bind-mounted) that
# sets APP_ENV=dusk.local is no production for the sync default to run in.
DUSK = """services:
  php{suffix}:
    image: osu-web-php
    volumes:
      - .:/app
    environment:
      APP_ENV: {app_env}
"""


def test_development_service_environment_is_no_production(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = DUSK.format(suffix="-dusk", app_env="dusk.local")
    assert run(tmp_path, {"compose.yaml": compose}, monkeypatch) == []


def test_deployed_service_environment_is_production_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = DUSK.format(suffix="", app_env="staging")
    (found,) = run(tmp_path, {"compose.yaml": compose}, monkeypatch)
    assert found.startswith("laravel-queue-sync config/queue.php:5 ")


def test_old_key_in_a_local_env_file_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = OLD_KEY.replace("APP_ENV=production", "APP_ENV=local")
    assert run(tmp_path, {".env.example": env}, monkeypatch) == []

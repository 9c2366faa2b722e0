"""`'default' => env('QUEUE_CONNECTION', 'sync')` with no env source setting it: the config
default is what runs. Said, with where the value came from, when there are jobs and a
production to run them in; quiet when an environment sets the connection or says local."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

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
    base = {"artisan": "<?php\n", "composer.json": "{}\n", "config/queue.php": QUEUE,
            "app/Jobs/ExportBook.php": JOB}  # fmt: skip
    write(tmp_path, {**base, **files})
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)
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

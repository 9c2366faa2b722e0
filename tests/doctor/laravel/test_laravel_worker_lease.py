"""Which connection's retry_after a worker command runs against, read through the shapes real
deployments write it in. Cut from an image's queue script (`exec php artisan queue:work
--timeout=0 ... >/proc/1/fd/1 2>/proc/1/fd/2`, its .env.production saying QUEUE_CONNECTION=sync:
no worker can work sync, so the real connections' common retry_after is the lease) and from a
Compose file whose environment passes `QUEUE_CONNECTION=${QUEUE_CONNECTION:-database}` on.
The quiet twins time out below the lease."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'sync'),
    'connections' => [
        'sync' => ['driver' => 'sync'],
        'database' => ['driver' => 'database', 'queue' => 'default', 'retry_after' => 90],
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 90],
    ],
];
"""
QUEUE_SH = """#!/bin/sh
set -eu

exec php /var/www/artisan queue:work --timeout={timeout} --tries=3 >/proc/1/fd/1 2>/proc/1/fd/2
"""
COMPOSE = """services:
  worker:
    image: app
    command: php artisan queue:work --tries=3 --timeout={timeout}
    environment:
      - QUEUE_CONNECTION=${QUEUE_CONNECTION:-database}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[str]:
    files = {"config/queue.php": QUEUE,
             **files}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-timeout-not-below-retry-after")


def script(timeout: int) -> dict[str, str]:
    env = "APP_ENV=production\nQUEUE_CONNECTION=sync\n"
    return {"scripts/docker/queue.sh": QUEUE_SH.replace("{timeout}", str(timeout)),
            "scripts/docker/.env.production": env}  # fmt: skip


def test_a_worker_beside_a_sync_default_runs_against_the_real_connections_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --timeout=0 is no timeout; the redirections are the shell's, not a connection name.
    assert run(tmp_path, monkeypatch, script(0)) == ["scripts/docker/queue.sh:4"]


def test_quiet_twin_worker_timeout_below_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, script(60)) == []


def test_a_compose_variable_passed_on_resolves_to_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker-compose.yml": COMPOSE.replace("{timeout}", "3600")}
    assert run(tmp_path, monkeypatch, files) == ["docker-compose.yml:4"]


def test_quiet_twin_compose_worker_below_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        run(tmp_path, monkeypatch, {"docker-compose.yml": COMPOSE.replace("{timeout}", "60")}) == []
    )

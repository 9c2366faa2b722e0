"""A Compose environment value is interpolated as Compose does before the application sees it:
`REDIS_QUEUE_RETRY_AFTER: "${REDIS_QUEUE_RETRY_AFTER:-7200}"` gives Laravel 7200. Cut from a
PIM's quick-start compose.yaml, which raises retry_after above its imports' 900 s on purpose
(through a YAML anchor shared by the app and queue services). Quiet: 7200 is above the job's
900. The twin without the override keeps config/queue.php's default 90 and is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'sync'),
    'connections' => [
        'redis' => [
            'driver'       => 'redis',
            'queue'        => env('REDIS_QUEUE', 'default'),
            'retry_after'  => (int) env('REDIS_QUEUE_RETRY_AFTER', 90),
        ],
    ],
];
"""
JOB = """<?php

namespace Webkul\\DataTransfer\\Jobs\\Import;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class ImportBatch implements ShouldQueue
{
    public $timeout = 900;

    public function handle(): void
    {
    }
}
"""
COMPOSE = """x-app-environment: &app-environment
  QUEUE_CONNECTION: redis
{override}
services:
  unopim-queue:
    image: webkul/unopim-queue:latest
    stop_grace_period: 1000s
    command: php artisan queue:work --timeout=900
    environment:
      <<: *app-environment
"""
OVERRIDE = '  REDIS_QUEUE_RETRY_AFTER: "${REDIS_QUEUE_RETRY_AFTER:-7200}"'


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "app/Jobs/ImportBatch.php": JOB,
             "compose.yaml": COMPOSE.replace("{override}", override)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-timeout-not-below-retry-after")


def test_quiet_a_compose_default_raises_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, OVERRIDE) == []


def test_without_the_override_the_config_default_is_below_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "app/Jobs/ImportBatch.php:9" in run(tmp_path, monkeypatch, "")

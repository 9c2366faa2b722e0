"""A Horizon supervisor on redis serves the jobs of a project whose default connection reads
as `sync` only from config/queue.php's env() fallback (no env source sets QUEUE_CONNECTION):
production dispatches them to redis. Cut from faveo-invoicing: supervisor-1 (timeout 30) serves
`reports`, where ReportExport sets $timeout = 300. The quiet twin's job stops at 20 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'sync'),
    'connections' => [
        'sync' => ['driver' => 'sync'],
        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => 900,
            'block_for' => null,
        ],
    ],
];
"""
HORIZON = """<?php

return [
    'environments' => [
        'production' => [
            'supervisor-1' => [
                'connection' => 'redis',
                'queue' => ['reports', 'default'],
                'balance' => 'simple',
                'processes' => 10,
                'tries' => 1,
                'timeout' => 30,
            ],
        ],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class ReportExport implements ShouldQueue
{
    use Queueable;

    public $tries = 5;

    public $timeout = {timeout};

    public function handle()
    {
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: int) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "config/horizon.php": HORIZON, ".env.example": "APP_ENV=local\n",
             "app/Jobs/ReportExport.php":
                 JOB.replace("{timeout}", str(timeout))}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-horizon-timeout-below-job")


def test_supervisor_below_a_job_on_the_fallback_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 300) == ["config/horizon.php:12"]


def test_quiet_twin_job_below_the_supervisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 20) == []

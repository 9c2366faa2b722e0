"""A job that sets its own $timeout is written to be queued: when the connection it reads is
`sync` only because config/queue.php falls back to it (no env source sets the key), the lease
it runs against is the one every real connection agrees on (osu-web's score-removal jobs,
$timeout = 36000 against retry_after 305 on both redis and database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, write

# Cut from osu-web config/queue.php: the default falls back to sync, both queues share 305.
QUEUE = """<?php

return [

    'default' => env('QUEUE_DRIVER', 'sync'),

    'connections' => [
        'sync' => [
            'driver' => 'sync',
        ],

        'database' => [
            'driver' => 'database',
            'table' => 'jobs',
            'queue' => 'default',
            'retry_after' => 305,
        ],

        'redis' => [
            'driver' => 'redis',
            'queue' => 'default',
            'retry_after' => 305,
        ],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Queue\\InteractsWithQueue;

class RemoveBeatmapsetSoloScores implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public $timeout = {timeout};

    public function handle(): void
    {
    }
}
"""


def run(tmp_path: Path, timeout: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    files = {"config/queue.php": QUEUE,
             ".env.example": "APP_ENV=local\n# QUEUE_DRIVER=\n",
             "app/Jobs/RemoveBeatmapsetSoloScores.php": JOB.replace(
                 "{timeout}", str(timeout))}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    rule = "laravel-timeout-not-below-retry-after"
    return [f"{f.rule} {f.location.path}:{f.location.line} {f.message}"
            for f in report.findings if f.rule == rule]  # fmt: skip


def test_job_timeout_against_the_lease_all_real_connections_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, 36000, monkeypatch)
    assert found.startswith(
        "laravel-timeout-not-below-retry-after app/Jobs/RemoveBeatmapsetSoloScores.php:13 "
    )
    assert "retry_after 305 s" in found


def test_job_timeout_below_the_shared_lease_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, 300, monkeypatch) == []


def test_sync_an_env_file_sets_is_no_fallback_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """invoiceninja's .env.example writes QUEUE_CONNECTION=sync itself (that is the sync
    finding): the job's lease is not guessed from the other connections."""
    write(tmp_path, {".env": "APP_ENV=production\nQUEUE_DRIVER=sync\n"})
    assert run(tmp_path, 36000, monkeypatch) == []

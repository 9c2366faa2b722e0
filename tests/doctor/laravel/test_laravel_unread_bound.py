"""A job without its own $timeout is bounded by the workers that run it. When the only worker
is a Horizon supervisor whose timeout is written but cannot be resolved (coolify's
`min(max((int) env('HORIZON_TIMEOUT', 39600), ...), 85800)`), the bound is unknown: a retried
HTTP call is not said to outlive queue:work's 60 s default, which does not apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

# Cut from coolify config/horizon.php (defaults + production) and app/Jobs/CheckForUpdatesJob.php.
HORIZON = """<?php
return [
    'defaults' => [
        's6' => [
            'connection' => 'redis',
            'queue' => env('HORIZON_QUEUES', 'high,default'),
            'timeout' => {timeout},
        ],
    ],
    'environments' => [
        'production' => [
            's6' => [
                'minProcesses' => env('HORIZON_MIN_PROCESSES', 1),
            ],
        ],
    ],
];
"""
UNRESOLVED = """min(
                max((int) env('HORIZON_TIMEOUT', 39600), Backup::DEFAULT_TIMEOUT + 600),
                85800,
            )"""
QUEUE = """<?php
return ['default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => ['redis' => ['driver' => 'redis', 'retry_after' => 86400]]];
"""
JOB = """<?php
namespace App\\Jobs;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Support\\Facades\\Http;
class CheckForUpdatesJob implements ShouldQueue
{
    public function handle(): void
    {
        $response = Http::retry(3, 1000)->get(config('constants.coolify.versions_url'));
    }
}
"""


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [(UNRESOLVED, []),  # the supervisor's clock cannot be read: nothing to compare against
     ("60", ["app/Jobs/CheckForUpdatesJob.php:9"])],  # the twin: a written 60 s is a bound
)  # fmt: skip
def test_an_unresolved_supervisor_timeout_is_no_60_s_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str, expected: list[str]
) -> None:
    files = {"config/queue.php": QUEUE,
             "config/horizon.php": HORIZON.replace("{timeout}", timeout),
             "app/Jobs/CheckForUpdatesJob.php": JOB}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    assert sites(report, "laravel-client-timeout-not-below-job") == expected

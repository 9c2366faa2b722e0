"""A job that sets its own $timeout, on a default connection read as `sync` only from an env
template (`.env.example`, the developer's copy), runs in production on the connection the
project's workers serve: wbstack-api's statistics jobs, $timeout = 3600 against the redis
retry_after 100 its one Horizon supervisor serves, while its three connections disagree."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited

# Cut from wbstack-api config/queue.php: three connections with different leases.
QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'sync'),
    'connections' => [
        'sync' => ['driver' => 'sync'],
        'database' => ['driver' => 'database', 'table' => 'jobs', 'queue' => 'default',
            'retry_after' => 90],
        'beanstalkd' => ['driver' => 'beanstalkd', 'host' => 'localhost',
            'queue' => 'default', 'retry_after' => 90],
        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => 100,
            'block_for' => null,
        ],
    ],
];
"""
# Cut from wbstack-api config/horizon.php: one supervisor on redis.
HORIZON = """<?php

return [
    'environments' => [
        'production' => [
            'supervisor-1' => [
                'connection' => 'redis',
                'queue' => ['default'],
                'balance' => 'simple',
                'processes' => 10,
                'tries' => 1,
                'timeout' => 95,
            ],
        ],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

class PlatformStatsSummaryJob extends Job
{
    public $timeout = {timeout};

    public function handle(): void
    {
    }
}
"""
BASE = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Queue\\InteractsWithQueue;

abstract class Job implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public $timeout = 60;
}
"""


def run(
    tmp_path: Path, timeout: int, monkeypatch: pytest.MonkeyPatch, queue: str = QUEUE
) -> list[str]:
    files = {"config/queue.php": queue,
             "config/horizon.php": HORIZON,
             ".env.example": "APP_ENV=local\nQUEUE_CONNECTION=sync\n",
             "app/Jobs/Job.php": BASE,
             "app/Jobs/PlatformStatsSummaryJob.php": JOB.replace(
                 "{timeout}", str(timeout))}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    rule = "laravel-timeout-not-below-retry-after"
    return sited(report, rule)


def test_job_timeout_against_the_connection_the_workers_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, 3600, monkeypatch)
    assert found.startswith("app/Jobs/PlatformStatsSummaryJob.php:7 job PlatformStatsSummaryJob")
    assert "retry_after 100 s" in found and "'redis'" in found


def test_job_timeout_below_the_served_lease_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, 80, monkeypatch) == []


def test_no_timeout_against_a_lease_of_years_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """invoiceninja's retry_after 90000000 (about 2.9 years): redelivery switched off."""
    years = QUEUE.replace("'retry_after' => 100", "'retry_after' => 90000000")
    assert run(tmp_path, 0, monkeypatch, years) == []
    assert run(tmp_path, 0, monkeypatch) != []

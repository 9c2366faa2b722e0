"""A job's own timeout is compared with a lease even when the default connection is left to
the deployer's shell: a Compose `QUEUE_CONNECTION: ${QUEUE_CONNECTION}` names no connection the
doctor can read, but when every real connection of config/queue.php holds jobs for the same
retry_after, whichever one the deployment picks is that lease. Cut from a community site's
Dokploy stack (a queue service running the published image, an AI digest job with
#[Timeout(600)] against retry_after 90 on both redis and database). Quiet twins: a timeout
below the lease, and connections that disagree on retry_after (the lease is unknown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited

QUEUE = """<?php

return [

    'default' => env('QUEUE_CONNECTION', 'sync'),

    'connections' => [

        'sync' => [
            'driver' => 'sync',
        ],

        'database' => [
            'driver' => 'database',
            'table' => env('DB_QUEUE_TABLE', 'jobs'),
            'queue' => env('DB_QUEUE', 'default'),
            'retry_after' => (int) env('DB_QUEUE_RETRY_AFTER', 90),
        ],

        'redis' => [
            'driver' => 'redis',
            'connection' => env('REDIS_QUEUE_CONNECTION', 'default'),
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => (int) env('REDIS_QUEUE_RETRY_AFTER', {redis}),
        ],
    ],
];
"""
JOB = """<?php

declare(strict_types=1);

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldBeUnique;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Foundation\\Queue\\Queueable;
use Illuminate\\Queue\\Attributes\\Timeout;
use Illuminate\\Queue\\Attributes\\UniqueFor;

#[Timeout({timeout})]
#[UniqueFor(900)]
final class GenerateNewsDigestJob implements ShouldBeUnique, ShouldQueue
{
    use Queueable;

    public function handle(): void
    {
    }
}
"""
COMPOSE = """x-common-env: &common-env
    APP_ENV: ${APP_ENV}
    QUEUE_CONNECTION: ${QUEUE_CONNECTION}
    REDIS_HOST: ${REDIS_HOST}

services:
    queue:
        image: ghcr.io/example/site:main
        restart: always
        command:
            - "artisan"
            - "queue:work"
            - "--sleep=3"
            - "--tries=3"
            - "--queue=default,media,search"
        stop_signal: SIGTERM
        stop_grace_period: 900s
        environment:
            <<: *common-env
"""


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: int, redis: int = 90
) -> list[str]:
    files = {"config/queue.php": QUEUE.replace("{redis}", str(redis)),
             "docker-compose.prod.yml": COMPOSE,
             "app/Jobs/GenerateNewsDigestJob.php": JOB.replace(
                 "{timeout}", str(timeout))}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sited(report, "laravel-timeout-not-below-retry-after")


def test_job_timeout_against_the_lease_a_deploy_time_default_shares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, monkeypatch, 600)
    assert found.startswith("app/Jobs/GenerateNewsDigestJob.php:13 job GenerateNewsDigestJob")
    assert "retry_after 90 s" in found
    assert "set at deploy time" in found


def test_job_timeout_below_the_shared_lease_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 30) == []


def test_connections_that_disagree_leave_the_lease_unknown_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 600, redis=3600) == []

"""A job's queue set by overriding `queue($queue, $command)` with `$queue->pushOn('name', ...)`
(Laravel's older form, inherited by every job extending the base): a Compose worker is judged
on the jobs that reach its --queue list. Cut from REBELinBLUE/deployer: DeployProject ($timeout
0) goes to deployer-high, served by `queue`; `broadcast` serves only deployer-default and stays
quiet. The quiet twin's DeployProject stops within the 10 s grace."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_DRIVER', 'beanstalkd'),
    'connections' => [
        'beanstalkd' => [
            'driver' => 'beanstalkd',
            'host' => 'localhost',
            'queue' => 'deployer-default',
            'retry_after' => 90,
        ],
    ],
];
"""
COMPOSE = """services:
  queue:
    build: docker/artisan
    command: php artisan queue:work --queue=deployer-high,deployer-low --sleep=3 --tries=1

  broadcast:
    build: docker/artisan
    command: php artisan queue:work --queue=deployer-default --sleep=3 --tries=1
"""
BASE = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Queue\\Queue;

abstract class Job
{
    use Queueable;

    public function queue(Queue $queue, $command)
    {
        $queue->pushOn('deployer-low', $command);
    }
}
"""
DEPLOY = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Queue\\Queue;

class DeployProject extends Job implements ShouldQueue
{
    public $timeout = {timeout};

    public function handle()
    {
    }

    public function queue(Queue $queue, $command)
    {
        $queue->pushOn('deployer-high', $command);
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: int) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "docker-compose.yml": COMPOSE, "app/Jobs/Job.php": BASE,
             "app/Jobs/DeployProject.php":
                 DEPLOY.replace("{timeout}", str(timeout))}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-grace-below-job-timeout")


def test_only_the_worker_serving_the_jobs_queue_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 0) == ["docker-compose.yml:2"]


def test_quiet_twin_job_within_the_grace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(tmp_path, monkeypatch, 5) == []

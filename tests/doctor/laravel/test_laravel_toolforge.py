"""Toolforge jobs files run artisan workers as continuous jobs; the jobs framework gives each
pod 15 s between SIGTERM and SIGKILL, whatever the file says (FACTS.md). Cut from a Laravel
tool's toolforge/jobs.yaml: two continuous `queue:work-resilient` jobs (a project's wrapper named
after queue:work, read as it) with replicas, and a job of $timeout 300 on the high queue. Its
Sail Compose file (LARAVEL_SAIL, `sail-8.2/app`) runs the same worker for development and is
no deployment. The quiet twin's job is done in 10 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 600],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class GenerateQuestions implements ShouldQueue
{
    public $timeout = {timeout};

    public function __construct()
    {
        $this->onQueue('high');
    }

    public function handle(): void
    {
    }
}
"""
JOBS_YAML = """- name: queue-high
  image: php8.2
  command: php /data/project/t/artisan queue:work-resilient --queue=high,default --tries=3
  continuous: true
  emails: all
  replicas: 2
  no-filelog: true
- name: schedule
  image: php8.2
  command: php /data/project/tool/public_html/artisan schedule:work
  continuous: true
"""
SAIL = """services:
    laravel.queue:
        build:
            context: ./vendor/laravel/sail/runtimes/8.2
        image: sail-8.2/app
        command: 'php artisan queue:work-resilient --queue=high,default,low --tries=3'
        environment:
            LARAVEL_SAIL: 1
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: int) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "app/Jobs/GenerateQuestions.php": JOB.replace("{timeout}", str(timeout)),
             "toolforge/jobs.yaml": JOBS_YAML, "docker-compose.yml": SAIL}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-grace-below-job-timeout")


def test_a_toolforge_continuous_job_is_killed_15_s_after_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the job's entry, not on the Sail service that runs the same worker for development.
    assert run(tmp_path, monkeypatch, 300) == ["toolforge/jobs.yaml:1"]


def test_quiet_twin_jobs_done_within_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, 10) == []

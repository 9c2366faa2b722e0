"""The grace check is one finding per worker and names the job whose own $timeout is the
longest. The worker is cut from dabeastnet/bookstack (docker/entrypoint.sh's worker branch:
`queue:work --sleep=3 --tries=3 --timeout=90`, run by a Compose service with Docker's 10 s
grace); the jobs from SolomonOjigbo/parish-hub-api (app/Jobs/DatabaseBackupJob.php, a mysqldump
given a longer $timeout here, and app/Jobs/SendBulkSmsJob.php). The quiet twin's service
waits longer than the backup."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited

JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class {name} implements ShouldQueue
{
    use Queueable;

    public $timeout = {timeout};

    public function handle(): void
    {
    }
}
"""
COMPOSE = """services:
  worker:
    image: bookstack-local:latest
{grace}    command: php artisan queue:work --sleep=3 --tries=3 --timeout=90
"""


def grace_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str) -> list[str]:
    files = {"app/Jobs/DatabaseBackupJob.php":
                 JOB.replace("{name}", "DatabaseBackupJob").replace("{timeout}", "1800"),
             "app/Jobs/SendBulkSmsJob.php":
                 JOB.replace("{name}", "SendBulkSmsJob").replace("{timeout}", "120"),
             "docker-compose.yml": COMPOSE.replace("{grace}", grace)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sited(report, "laravel-grace-below-job-timeout")


def test_one_finding_per_worker_naming_the_longest_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = grace_findings(tmp_path, monkeypatch, "")
    assert found.startswith("docker-compose.yml:2 ")
    assert "jobs of up to 1800 s (job DatabaseBackupJob)" in found


def test_quiet_twin_grace_above_the_longest_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert grace_findings(tmp_path, monkeypatch, "    stop_grace_period: 31m\n") == []

"""A project's job may be a package's job with its own settings: `class CrawlSiteJob extends
\\Spatie\\SiteSearch\\Jobs\\CrawlSiteJob { public $timeout = 60 * 30; }` (cut from a blog run
by Horizon, with no config/queue.php, so redis keeps the framework's retry_after 90). The
parent lives in vendor/, which is not read, but a class named as a job that sets a property
only a queue worker reads is queued. Quiet twins: the same property on a class extending a
package class that is not a job, and a timeout below the lease."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited

JOB = """<?php

namespace App\\Jobs;

class CrawlSiteJob extends {parent}
{
    public $timeout = {timeout};
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parent: str, timeout: str) -> list[str]:
    files = {".env.example": "APP_ENV=production\nQUEUE_CONNECTION=redis\n",
             "app/Jobs/CrawlSiteJob.php": JOB.replace("{parent}", parent).replace(
                 "{timeout}", timeout)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sited(report, "laravel-timeout-not-below-retry-after")


def test_a_package_job_with_its_own_timeout_is_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, monkeypatch, "\\Spatie\\SiteSearch\\Jobs\\CrawlSiteJob", "60 * 30")
    assert found.startswith("app/Jobs/CrawlSiteJob.php:7 job CrawlSiteJob may run 1800 s")
    assert "retry_after 90 s" in found


def test_a_package_class_that_is_no_job_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "\\Spatie\\Crawler\\Crawler", "60 * 30") == []


def test_a_package_job_below_the_lease_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "\\Spatie\\SiteSearch\\Jobs\\CrawlSiteJob", "60") == []

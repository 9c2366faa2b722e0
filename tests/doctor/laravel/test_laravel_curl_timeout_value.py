"""A raw curl call's own CURLOPT_TIMEOUT is read (`10 * 60` evaluated) and compared with the
job's timeout: cut from wbstack-api's MediawikiSandboxLoadData, a 600 s curl POST in a job that
inherits $timeout = 60 from its base class. The quiet twin's curl gives up at 30 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

BASE = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

abstract class Job implements ShouldQueue
{
    public $timeout = 60;
}
"""
JOB = """<?php

namespace App\\Jobs;

class MediawikiSandboxLoadData extends Job
{
    public function handle(MediaWikiHostResolver $mwHostResolver)
    {
        $curl = curl_init();
        curl_setopt_array($curl, [
            CURLOPT_URL => $mwHostResolver->getBackendHostForDomain($this->wikiDomain) . '/load',
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_TIMEOUT => {timeout}, // TODO Long 10 mins
            CURLOPT_CUSTOMREQUEST => 'POST',
        ]);

        $rawResponse = curl_exec($curl);
        curl_close($curl);
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str) -> list[str]:
    files = {"app/Jobs/Job.php": BASE,
             "app/Jobs/MediawikiSandboxLoadData.php": JOB.replace(
                 "{timeout}", timeout)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    rules = ("laravel-client-timeout-not-below-job", "laravel-client-timeout-missing")
    return [f"{rule} {site}" for rule in rules for site in sites(report, rule)]


def test_curl_timeout_past_the_job_timeout_is_reported_on_curl_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "10 * 60") == [
        "laravel-client-timeout-not-below-job app/Jobs/MediawikiSandboxLoadData.php:9"
    ]


def test_curl_timeout_zero_waits_forever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(tmp_path, monkeypatch, "0") == [
        "laravel-client-timeout-missing app/Jobs/MediawikiSandboxLoadData.php:9"
    ]


def test_quiet_twin_curl_timeout_below_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "30") == []

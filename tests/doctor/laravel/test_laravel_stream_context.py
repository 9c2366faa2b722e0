"""`file_get_contents($url, false, $ctx)` with a stream context the job makes itself: a context
of 'ssl' options only sets no timeout, so the read is bounded by nothing but
default_socket_timeout per read (FACTS.md). Cut from a federated app's story-fetching job
(`stream_context_create(['ssl' => ['verify_peer' => false, ...]])` around a remote attachment
URL). The quiet twin's context sets 'http' => ['timeout' => 10]."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

JOB = """<?php

namespace App\\Jobs\\StoryPipeline;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class StoryFetch implements ShouldQueue
{
    public function handle()
    {
        $payload = $this->activity;
        $contextOptions = [
            'ssl' => [
                'verify_peer' => false,
                'verify_peername' => false
            ],{http}
        ];
        $ctx = stream_context_create($contextOptions);
        $data = file_get_contents($payload['attachment']['url'], false, $ctx);
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http: str) -> list[str]:
    job = JOB.replace("{http}", http)
    files = {"app/Jobs/StoryPipeline/StoryFetch.php": job}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


def test_a_context_of_ssl_options_sets_no_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "") == ["app/Jobs/StoryPipeline/StoryFetch.php:19"]


def test_quiet_twin_context_with_an_http_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "\n            'http' => ['timeout' => 10],") == []

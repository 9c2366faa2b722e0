"""Calls the doctor cannot follow from a job's handle() are said in the report, never passed
over in silence. Cut from a job whose handler gets its client injected (cachet's beacon) and
one that dispatches to a method chosen at run time; the twin calls only its own methods."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project

JOB = """<?php

namespace App\\Jobs;

use App\\Integrations\\Beacon;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class SendBeacon implements ShouldQueue
{
    public $timeout = 30;

    public function handle(Beacon $beacon, int $attempt = 1): void
    {
        {body}
    }

    private function record(): void
    {
    }
}
"""
UNIT = "[Service]\nExecStart=/usr/bin/php /srv/app/artisan queue:work\nTimeoutStopSec=90\n"


def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> list[str]:
    files = {"app/Jobs/SendBeacon.php": JOB.replace("{body}", body),
             "deploy/worker.service": UNIT}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return [s.reason for s in report.skipped if "not followed" in s.reason]


def test_injected_dynamic_and_container_calls_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = ("$beacon->send();\n        $this->{$this->method}();\n"
            "        app(Client::class)->post('/ping');")  # fmt: skip
    said = notes(tmp_path, monkeypatch, body)
    assert len(said) == 3, said
    assert any("$beacon->send() (Beacon injected into handle())" in s for s in said)
    assert any("a method chosen at run time" in s for s in said)
    assert any("resolved from the container" in s for s in said)


def test_own_methods_and_scalar_parameters_are_followed_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert notes(tmp_path, monkeypatch, "$this->record();") == []

"""A Horizon supervisor whose timeout is below its jobs' is one finding on the supervisor (its
`'timeout' =>` line, or its key when Horizon's 60 s default applies), naming the longest job:
the supervisor's timeout is what to change, not each job (bench/doctor_corpus/CONVENTION.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, located, sites

# Cut from a Laravel config/horizon.php (defaults + a production environment, as the Horizon
# stub and coolify/pixelfed write it) and two long job classes.
HORIZON = """<?php
return [
    'defaults' => [
        'supervisor-1' => [
            'connection' => 'redis',
            'queue' => ['default'],
        ],
    ],
    'environments' => [
        'production' => [
            'supervisor-1' => [
                'maxProcesses' => 10,
{timeout}            ],
        ],
    ],
];
"""
QUEUE = """<?php
return ['default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => ['redis' => ['driver' => 'redis', 'retry_after' => 3700]]];
"""
JOB = """<?php
namespace App\\Jobs;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
class {name} implements ShouldQueue
{{
    public $timeout = {timeout};
    public function handle(): void {{}}
}}
"""


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [("                'timeout' => 600,\n", ["config/horizon.php:13"]),
     ("", ["config/horizon.php:11"]),  # Horizon's 60 s: the supervisor's key line
     ("                'timeout' => 3650,\n", [])],  # above both jobs: the quiet twin
)  # fmt: skip
def test_one_finding_per_supervisor_on_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str, expected: list[str]
) -> None:
    report = laravel_project(tmp_path, {
        "config/queue.php": QUEUE, "config/horizon.php": HORIZON.format(timeout=timeout),
        "app/Jobs/ExportLedger.php": JOB.format(name="ExportLedger", timeout=3600),
        "app/Jobs/ImportCatalog.php": JOB.format(name="ImportCatalog", timeout=1800),
    }, monkeypatch)  # fmt: skip
    found = located(report, "laravel-horizon-timeout-below-job")
    assert sites(report, "laravel-horizon-timeout-below-job") == expected
    if found:
        assert "job ExportLedger may run 3600 s" in found[0] and "1 more job(s)" in found[0]


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [("                'timeout' => 4000,\n", ["config/horizon.php:13"]),
     ("                'timeout' => 3600,\n", [])],  # below retry_after 3700: the quiet twin
)  # fmt: skip
def test_a_supervisor_timeout_past_retry_after_is_said_on_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str, expected: list[str]
) -> None:
    files = {"config/queue.php": QUEUE,
             "config/horizon.php": HORIZON.format(timeout=timeout)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    assert sites(report, "laravel-timeout-not-below-retry-after") == expected


COMPOSE = """services:
  worker:
    image: app
    command: php artisan {command}
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [("horizon", ["config/horizon.php:11"]),
     ("queue:work --timeout=3650", [])],  # Horizon installed, queue:work deployed: quiet twin
)  # fmt: skip
def test_horizon_supervisors_count_only_when_horizon_is_what_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, expected: list[str]
) -> None:
    """Cut from a Laravel API whose config/horizon.php ships the stub's supervisor (60 s) while
    its Compose worker service runs queue:work: Horizon's supervisors kill nothing there."""
    report = laravel_project(tmp_path, {
        "config/queue.php": QUEUE, "config/horizon.php": HORIZON.format(timeout=""),
        "app/Jobs/ExportLedger.php": JOB.format(name="ExportLedger", timeout=3600),
        "docker-compose.yml": COMPOSE.format(command=command),
    }, monkeypatch)  # fmt: skip
    assert sites(report, "laravel-horizon-timeout-below-job") == expected

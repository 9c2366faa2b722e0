"""A worker command in a deployment file no reader understands (a process manager's own
format) is not dropped: its timeout is compared with retry_after, and the report says its stop
grace could not be read. Cut from an image's chaperone config (`command: "./artisan
queue:listen --timeout=$(ARTISAN_QUEUE_JOB_TIMEOUT:-600)"`, the variable's default read as the
value). The quiet twin's timeout is below retry_after: no finding, the unread grace still said.
Also: a Compose list-form `environment:` entry is located on its own item line."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, located, sites
from tenure.doctor.model import Report

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 90],
    ],
];
"""
CHAPERONE = """platform.watch.worker.log.service: {
	type: simple,
	command: "tail -f worker.log",
}

platform.artisan.queue_listen.service: {
	type: simple,
	directory: "/var/www",
	command: "./artisan queue:listen --timeout=$(ARTISAN_QUEUE_JOB_TIMEOUT:-{timeout})",
	enabled: "$(ENABLE_QUEUE_LISTEN:-false)",
	restart: true
}
"""
COMPOSE = """services:
  all-in-one:
    build: .
    environment:
      - LOG_CHANNEL=stderr
      - QUEUE_CONNECTION=sync
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> Report:
    files = {"config/queue.php": QUEUE,
             **files}  # fmt: skip
    return laravel_project(tmp_path, files, monkeypatch)


def unread(report: Report) -> list[str]:
    return [s.path for s in report.skipped if "stop grace could not be read" in s.reason]


def test_a_worker_in_an_unread_config_is_compared_and_its_grace_said_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker/run.tasks.conf": CHAPERONE.replace("{timeout}", "600")}
    report = run(tmp_path, monkeypatch, files)
    assert sites(report, "laravel-timeout-not-below-retry-after") == ["docker/run.tasks.conf:9"]
    assert unread(report) == ["docker/run.tasks.conf:9"]


def test_quiet_twin_timeout_below_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"docker/run.tasks.conf": CHAPERONE.replace("{timeout}", "60")}
    report = run(tmp_path, monkeypatch, files)
    assert located(report, "laravel-timeout-not-below-retry-after") == []
    assert unread(report) == ["docker/run.tasks.conf:9"]


SAIL = """services:
  laravel.queue:
    image: 'sail-8.4/app'
    command: 'php artisan queue:work --sleep=10 --timeout=0 --tries=3'
    environment:
      LARAVEL_SAIL: 1
"""


def test_quiet_a_development_compose_file_is_read_not_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from a Sail stack repeating the image's worker: understood, and development."""
    report = run(tmp_path, monkeypatch, {"docker-compose.yml": SAIL})
    assert located(report, "laravel-timeout-not-below-retry-after") == []
    assert unread(report) == []


def test_a_list_form_environment_entry_is_located_on_its_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run(tmp_path, monkeypatch, {"docker-compose.yml": COMPOSE})
    sync = sites(report, "laravel-queue-sync")
    assert sync == ["docker-compose.yml:6"]

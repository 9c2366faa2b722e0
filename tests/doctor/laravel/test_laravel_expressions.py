"""Expressions in Laravel config are evaluated (ternaries on APP_ENV, `?:`/`??` fallbacks of
env(), casts, min/max); a value that cannot be resolved is unknown and said so, never taken as
"no timeout". Layouts cut from real config files, each with a quiet twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project

LEASE = "laravel-timeout-not-below-retry-after"
QUEUE = """<?php
return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => {retry_after},
            'block_for' => null,
        ],
    ],
];
"""
UNIT = "[Service]\nExecStart=/usr/bin/php /srv/app/artisan {command}\nTimeoutStopSec=900\n"

WORKER = UNIT.format(command="queue:work redis --timeout=120")


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> tuple[
        list[str], list[str]]:  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return [f.rule for f in report.findings], [s.reason for s in report.skipped]


@pytest.mark.parametrize(("env", "found"), [("production", [LEASE]), ("staging", [])])
def test_ternary_on_the_environment_picks_its_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, found: list[str]
) -> None:
    """Cut from a queue.php that shortens retry_after in production only."""
    retry = "env('APP_ENV') === 'production' ? 90 : (int) env('REDIS_RETRY_AFTER', 900)"
    rules, _ = run(tmp_path, monkeypatch, {
        "config/queue.php": QUEUE.format(retry_after=retry), ".env": f"APP_ENV={env}\n",
        "deploy/worker.service": WORKER})  # fmt: skip
    assert rules == found


@pytest.mark.parametrize(("env", "found"), [("", [LEASE]), ("REDIS_RETRY_AFTER=600\n", [])])
def test_short_ternary_fallback_of_an_unset_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, found: list[str]
) -> None:
    retry = "env('REDIS_RETRY_AFTER') ?: 90"
    rules, _ = run(tmp_path, monkeypatch, {
        "config/queue.php": QUEUE.format(retry_after=retry), ".env": f"APP_ENV=production\n{env}",
        "deploy/worker.service": WORKER})  # fmt: skip
    assert rules == found


HORIZON = """<?php
return [
    'environments' => [
        'production' => [
            'supervisor-long' => [
                'connection' => 'redis',
                'queue' => ['default'],
                'timeout' => {timeout},
            ],
        ],
    ],
];
"""


def test_unresolved_horizon_timeout_is_unknown_not_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from a horizon.php whose supervisor timeout comes from another config key: the
    doctor cannot resolve it, so it says so instead of reporting "no timeout at all"."""
    files = {"config/queue.php": QUEUE.format(retry_after="90"), ".env": "APP_ENV=production\n",
             "deploy/worker.service": UNIT.format(command="horizon")}  # fmt: skip
    rules, skipped = run(tmp_path, monkeypatch, {**files, "config/horizon.php": HORIZON.format(
        timeout="config('jobs.long_timeout')")})  # fmt: skip
    assert LEASE not in rules
    assert any("supervisor-long timeout cannot be resolved" in reason for reason in skipped)
    # The twin with a resolvable timeout above retry_after is reported.
    rules, _ = run(tmp_path, monkeypatch, {**files, "config/horizon.php": HORIZON.format(
        timeout="max(env('HORIZON_TIMEOUT', 60), 300)")})  # fmt: skip
    assert LEASE in rules

"""Laravel 11+ merges the framework's config/queue.php under the project's: a project file
that only adds a connection (and sets no 'default') still has the framework's redis
connection, retry_after 90 unless REDIS_QUEUE_RETRY_AFTER says otherwise, and the framework's
default connection, which is not sync. Cut from spatie/freek.dev (config/queue.php with only
mailcoach-redis, config/horizon.php's production supervisor on 'redis')."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, located, sites

QUEUE = """<?php

return [

    'connections' => [
        'mailcoach-redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => 11 * 60,
            'block_for' => null,
        ],
    ],

];
"""
HORIZON = """<?php
return [
    'environments' => [
        'production' => [
            'supervisor-1' => [
                'connection' => 'redis',
                'queue' => ['default'],
                'timeout' => 60 * 30,
            ],
        ],
    ],
];
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [("APP_ENV=production\n", ["config/horizon.php:8"]),
     ("APP_ENV=production\nREDIS_QUEUE_RETRY_AFTER=2000\n", [])],  # the quiet twin
)  # fmt: skip
def test_a_connection_the_project_file_leaves_out_is_the_frameworks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, expected: list[str]
) -> None:
    files = {".env.example": env,
             "config/queue.php": QUEUE, "config/horizon.php": HORIZON}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    assert sites(report, "laravel-timeout-not-below-retry-after") == expected
    assert located(report, "laravel-queue-sync") == []  # the framework's default is not sync

"""RoadRunner's `service:` plugin runs `php artisan queue:work` (`.rr.yaml`), and a queue on
the mongodb driver leases jobs like the database driver: `expire`, else 60 s. Cut from a Lumen
API whose image execs `rr serve -c .rr.yaml`, its queue:work with no --timeout (60 s) on a
mongodb connection whose retry_after is commented out. The quiet twin gives the connection an
`expire` above the timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'database'),
    'connections' => [
        'database' => [
            'driver' => 'mongodb',
            'connection' => 'mongodb',
            'table' => env('QUEUE_TABLE', 'jobs'),
            'queue' => 'low',
{expire}//            'retry_after' => 60,
        ],
    ],
];
"""
RR = """version: "3"

server:
  command: "php /app/worker.php"

http:
  address: 0.0.0.0:8080

service:
  laravel_queue_worker_1:
    command: "php /app/artisan queue:work --queue=high,default"
    process_num: 1
    restart_sec: 5
  supercronic:
    command: "supercronic /etc/supercronic/laravel"
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expire: str) -> list[str]:
    files = {"config/queue.php": QUEUE.format(expire=expire), ".rr.yaml": RR}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-timeout-not-below-retry-after")


def test_a_roadrunner_service_worker_is_checked_against_the_mongodb_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "") == [".rr.yaml:11"]


def test_quiet_twin_expire_above_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "            'expire' => 120,\n") == []

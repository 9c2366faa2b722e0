"""A Laravel application in a sub-folder (`backend/` beside the Compose file and the worker's
Dockerfile) is found and audited, its findings named from PATH; a supervisord config the
worker's image copies in as a template (`horizon.conf.tpl`) is read as the config it becomes.
Cut from a Compose project: `backend-worker` builds `backend-worker.dockerfile`, which copies
`backend/` and `backend-worker/horizon.conf.tpl` and runs `init.sh` (supervisord); the program
runs `php /var/www/artisan horizon` with no stopwaitsecs. The quiet twin holds the same files
with no `artisan` in `backend/`: no Laravel application, no Laravel finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 7500],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class IssueCertificateJob implements ShouldQueue
{
    public $timeout = 21600;

    public function handle(): void
    {
    }
}
"""
COMPOSE = """services:
  backend-worker:
    build:
      context: .
      dockerfile: ./backend-worker.dockerfile
    environment:
      - QUEUE_CONNECTION=redis
"""
DOCKERFILE = """FROM php:8.2-fpm-bullseye
COPY backend/ /var/www
RUN pip3 install supervisor
COPY backend-worker/horizon.conf.tpl /etc/supervisor/conf.d/horizon.conf.tpl
COPY backend-worker/init.sh /usr/local/bin/init.sh
ENTRYPOINT ["/bin/sh", "/usr/local/bin/init.sh"]
"""
PROGRAM = """[supervisord]
nodaemon=true

[program:horizon]
process_name=%(program_name)s_%(process_num)02d
command=php /var/www/artisan horizon
autostart=true
autorestart=true
"""
INIT = """#!/bin/sh
envsubst < /etc/supervisor/conf.d/horizon.conf.tpl > /etc/supervisor/conf.d/horizon.conf
supervisord -c /etc/supervisor/conf.d/horizon.conf
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, app: bool) -> list[str]:
    files = {"backend/composer.json": "{}\n", "backend/config/queue.php": QUEUE,
             "backend/app/Jobs/IssueCertificateJob.php": JOB, "docker-compose.yml": COMPOSE,
             "backend-worker.dockerfile": DOCKERFILE, "backend-worker/horizon.conf.tpl": PROGRAM,
             "backend-worker/init.sh": INIT}  # fmt: skip
    if app:
        files["backend/artisan"] = "<?php\n"
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False)
    return [f.split(" ")[0] + " " + f.split(" ")[1] for f in located(report)
            if f.startswith("laravel-")]  # fmt: skip


def test_an_application_in_a_sub_folder_is_audited_with_the_files_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, app=True)
    job = "backend/app/Jobs/IssueCertificateJob.php:9"
    assert f"laravel-timeout-not-below-retry-after {job}" in found
    # The templated program's default 10 s stop wait, on its [program:x] header.
    assert "laravel-grace-below-job-timeout backend-worker/horizon.conf.tpl:4" in found


def test_quiet_twin_no_artisan_no_laravel_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, app=False) == []

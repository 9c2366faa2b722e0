"""A supervisord program inside a published image, run by several Compose files (the
`compose.*.sample.yaml` a user picks one of): each service's grace is a clock of its own and
is said on its own file, besides the program's own shorter stop wait. The image is the
project's because its Dockerfile clones the repository its name is published under; a service
whose environment turns the program's `autostart=%(ENV_X)s` off runs no worker.
Cut from a Laravel + Horizon project: Dockerfile with `ARG REPO_URL=https://github.com/...`
and `git clone ... ${REPO_URL}`, CMD supervisord, `[program:horizon]` with stopwaitsecs=3 and
autostart from ENABLE_HORIZON. The quiet twin: a service grace above the job's timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 90],
    ],
];
"""
JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class StatServerJob implements ShouldQueue
{
    public $timeout = 60;

    public function handle(): void
    {
    }
}
"""
DOCKERFILE = """FROM phpswoole/swoole:php8.2-alpine
WORKDIR /www
ARG REPO_URL=https://github.com/owner/Panel
ARG BRANCH_NAME=master
RUN rm -rf ./* && \\
    git clone --depth 1 --branch ${BRANCH_NAME} ${REPO_URL} .
COPY .docker/supervisor/supervisord.conf /etc/supervisor/conf.d/supervisord.conf
ENV ENABLE_HORIZON=true
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/usr/bin/supervisord", "-c", "/etc/supervisor/conf.d/supervisord.conf"]
"""
SUPERVISORD = """[supervisord]
nodaemon=true

[program:horizon]
command=php /www/artisan horizon
autostart=%(ENV_ENABLE_HORIZON)s
autorestart=true
stopwaitsecs=3
stopsignal=SIGINT
"""
SAMPLE = """services:
  panel:
    image: ghcr.io/owner/panel:latest
{grace}    environment:
      - ENABLE_HORIZON=true
"""
SPLIT = """services:
  web:
    image: ghcr.io/owner/panel:latest
    environment:
      ENABLE_HORIZON: "false"
  horizon:
    image: ghcr.io/owner/panel:latest
{grace}    environment:
      ENABLE_WEB: "false"
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, repo: str) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "app/Jobs/StatServerJob.php": JOB,
             "Dockerfile": DOCKERFILE.replace("owner/Panel", repo),
             ".docker/supervisor/supervisord.conf": SUPERVISORD,
             "compose.sample.yaml": SAMPLE.format(grace=grace),
             "compose.split.sample.yaml": SPLIT.format(grace=grace)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-grace-below-job-timeout")


def test_each_compose_file_running_the_image_is_said_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sorted(run(tmp_path, monkeypatch, "", "owner/Panel")) == [
        ".docker/supervisor/supervisord.conf:8",
        "compose.sample.yaml:2",
        "compose.split.sample.yaml:6",  # not web: it turns horizon's autostart off
    ]


def test_quiet_twin_services_wait_longer_than_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "    stop_grace_period: 2m\n", "owner/Panel")
    assert found == [".docker/supervisor/supervisord.conf:8"]  # its own 3 s still binds


def test_an_image_cloned_from_another_repository_is_not_the_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "", "someone/else")
    assert found == [".docker/supervisor/supervisord.conf:8"]


def test_a_service_grace_equal_to_the_programs_is_said_once_on_the_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "    stop_grace_period: 3s\n", "owner/Panel")
    assert found == [".docker/supervisor/supervisord.conf:8"]

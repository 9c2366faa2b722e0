"""pm2 process files run artisan workers: a YAML `apps:` entry whose `script` is the whole
command, and an ecosystem.config.js app whose `script` is artisan run by `interpreter: php`
with `args`. pm2 SIGKILLs an app `kill_timeout` ms after its SIGINT, 1600 ms when unset
(FACTS.md). Cut from a Laravel panel's pm2.yaml (`php artisan horizon`, no kill_timeout) and
an ecosystem file shaped like pm2's own documentation. The quiet twins set a kill_timeout above
the longest job."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites
from tenure.doctor.readers.pm2 import text_apps

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

class SendEmailJob implements ShouldQueue
{
    public $timeout = 10;

    public function handle(): void
    {
    }
}
"""
PM2_YAML = """apps:
  - name     : 'V2Board'
    script   : 'php artisan horizon'
    instances: 1
{kill}    out_file : './storage/logs/queue/queue.log'
"""
ECOSYSTEM = """// pm2 start ecosystem.config.js
module.exports = {
  apps: [
    {
      name: 'web', // not a worker
      script: 'server.js',
    },
    {
      name: "queue-worker",
      script: "artisan",
      interpreter: "php",
      args: ["queue:work", "--timeout=30", `--sleep=3`],
      env: { APP_ENV: "production", NESTED: { kill_timeout: 1 } },
      /* kill_timeout: 1, */
{kill}      instances: 2,
    },
  ],
};
"""

KILL = "      kill_timeout: 45000,\n"


def ecosystem(kill: str) -> str:
    return ECOSYSTEM.replace("{kill}", kill)


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[str]:
    files = {"config/queue.php": QUEUE,
             "app/Jobs/SendEmailJob.php": JOB, **files}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-grace-below-job-timeout")


def test_a_pm2_yaml_app_without_kill_timeout_kills_horizon_after_1_6_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, {"pm2.yaml": PM2_YAML.format(kill="")}) == ["pm2.yaml:2"]


def test_quiet_twin_yaml_kill_timeout_above_horizon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kill = "    kill_timeout: 90000\n"
    assert run(tmp_path, monkeypatch, {"pm2.yaml": PM2_YAML.format(kill=kill)}) == []


def test_an_ecosystem_js_worker_with_the_default_kill_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"ecosystem.config.js": ecosystem("")}
    assert run(tmp_path, monkeypatch, files) == ["ecosystem.config.js:9"]


def test_quiet_twin_ecosystem_kill_timeout_above_the_worker_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"ecosystem.config.js": ecosystem(KILL)}
    assert run(tmp_path, monkeypatch, files) == []


def test_the_js_literal_is_read_key_by_key_with_its_lines() -> None:
    apps = list(text_apps("ecosystem.config.js", ecosystem(KILL)))
    assert [a.name for a in apps] == ["web", "queue-worker"]
    worker = apps[1]
    assert worker.argv == ["php", "artisan", "queue:work", "--timeout=30", "--sleep=3"]
    assert worker.instances == 2 and worker.command_at.line == 10
    assert worker.grace is not None and worker.grace.amount == 45.0
    assert worker.grace.source.line == 15  # not the nested env key, not the comment

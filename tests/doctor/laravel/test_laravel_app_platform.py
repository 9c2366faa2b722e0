"""DigitalOcean App Platform specs (`.do/app.yaml`): a `workers:` component whose run_command
is `php artisan queue:work` is a deployed worker, and the spec's `envs` (the app's, then the
component's own) are its environment. Cut from a ticketing app with Laravel in backend/: the
spec sets QUEUE_CONNECTION=redis, whose retry_after is 60, equal to queue:work's default
timeout. Quiet twins: a worker with --timeout=30, and the database connection (retry_after 90)
picked by the spec. The platform's stop grace is unknown (FACTS.md does not write it): the
worker's grace is said to be unread, never guessed."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited, write

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'sync'),

    'connections' => [
        'sync' => [
            'driver' => 'sync',
        ],

        'database' => [
            'driver' => 'database',
            'table' => 'jobs',
            'queue' => 'default',
            'retry_after' => 90,
        ],

        'redis' => [
            'driver' => 'redis',
            'connection' => 'default',
            'queue' => env('REDIS_QUEUE', 'default'),
            'retry_after' => 60,
            'block_for' => null,
        ],
    ],
];
"""
SPEC = """alerts:
  - rule: DEPLOYMENT_FAILED
envs:
  - key: APP_KEY
    scope: RUN_AND_BUILD_TIME
    type: SECRET
  - key: QUEUE_CONNECTION
    scope: RUN_AND_BUILD_TIME
    value: {connection}
jobs:
  - dockerfile_path: /backend/Dockerfile
    instance_count: 1
    kind: PRE_DEPLOY
    name: migrate
    run_command: php artisan migrate --force
    source_dir: backend
name: events-backend-app
region: sfo
services:
  - build_command: yarn build
    name: frontend
    run_command: yarn start
    source_dir: frontend
workers:
  - dockerfile_path: /backend/Dockerfile
    instance_count: 1
    instance_size_slug: professional-xs
    name: events-worker
    run_command: php artisan queue:work{options}
    source_dir: backend
"""


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connection: str = "redis", options: str = ""
) -> tuple[list[str], list[str]]:
    files = {"backend/config/queue.php": QUEUE,
             "backend/.env.example": "APP_ENV=local\nQUEUE_CONNECTION=sync\n",
             ".do/app.yaml": SPEC.replace("{connection}", connection).replace(
                 "{options}", options)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch, app_dir="backend")
    found = sited(report, "laravel-timeout-not-below-retry-after")
    return found, [f"{s.path}: {s.reason}" for s in report.skipped]


def test_the_spec_worker_against_the_connection_its_envs_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, skipped = run(tmp_path, monkeypatch)
    assert found == [
        ".do/app.yaml:29 worker app-platform events-worker may run 60 s, but connection 'redis' "
        "hands a reserved job to another worker after retry_after 60 s: a slow job runs twice "
        "at once."
    ]
    assert any(s.startswith(".do/app.yaml:29: worker started here") for s in skipped)


def test_a_timeout_below_the_lease_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, options=" --timeout=30")[0] == []


def test_the_database_connection_the_spec_picks_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, connection="database")[0] == []


def test_the_deploy_button_template_holds_the_spec_under_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.do/deploy.template.yaml` (the "Deploy to DigitalOcean" button) nests the same spec."""
    template = "spec:\n" + "".join(f"  {line}\n" for line in SPEC.splitlines())
    write(
        tmp_path,
        {
            ".do/deploy.template.yaml": template.replace("{connection}", "redis").replace(
                "{options}", ""
            )
        },
    )
    found, _ = run(tmp_path, monkeypatch, connection="database")
    assert [f.split(" ", 1)[0] for f in found] == [".do/deploy.template.yaml:30"]

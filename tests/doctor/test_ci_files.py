"""CI files are never the deployment: their environment and commands are the test run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose
from tenure.doctor.walk import is_development_name


def test_ci_files_and_folders_are_not_production() -> None:
    for rel in (".gitlab-ci.yml", "bitbucket-pipelines.yml", "azure-pipelines.yml",
                ".github/workflows/.env", ".github/workflows/deploy.yml", ".gitlab-ci/.env",
                ".circleci/config.yml", ".env.github", "ci/.env", ".drone.yml"):  # fmt: skip
        assert is_development_name(rel), rel
    for rel in ("docker/.env.production", "deploy/docker-compose.yml", ".env",
                "k8s/worker.yaml", "deploy/pipeline/worker.service",
                ".github/docker/supervisord.conf"):  # fmt: skip
        assert not is_development_name(rel), rel


def test_development_vms_are_not_production() -> None:
    """Laravel Homestead and Vagrant boxes are local machines: a supervisord program under
    `homestead/etc/supervisor/conf.d/` (cut from a BPM platform's repository) is no deployment;
    the same file under `docker/` is."""
    assert is_development_name("homestead/etc/supervisor/conf.d/processmaker-horizon.conf")
    assert is_development_name("vagrant/provision/worker.conf")
    assert not is_development_name("docker/etc/supervisor/conf.d/processmaker-horizon.conf")


QUEUE = """<?php
return [
    'default' => env('QUEUE_CONNECTION', 'database'),
    'connections' => [
        'sync' => ['driver' => 'sync'],
        'database' => ['driver' => 'database', 'table' => 'jobs', 'retry_after' => 90],
    ],
];
"""

UNIT = "[Service]\nExecStart=/usr/bin/php /srv/app/artisan queue:work\nTimeoutStopSec=90\n"


@pytest.mark.parametrize(("rel", "found"), [(".github/workflows/.env", []),
                                            ("deploy/.env", ["laravel-queue-sync"])])  # fmt: skip
def test_a_ci_env_file_is_not_the_production_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str, found: list[str]
) -> None:
    """Cut from a Laravel project whose GitHub Actions env file runs the suite with the sync
    queue and APP_ENV=production; the same file under deploy/ is the deployment's (twin)."""
    files = {"artisan": "#!/usr/bin/env php\n<?php\n", "composer.json": '{"name": "fx/ci"}',
             "config/queue.php": QUEUE, "deploy/worker.service": UNIT,
             rel: "APP_ENV=production\nQUEUE_CONNECTION=sync\n"}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)
    assert [f.rule for f in report.findings] == found

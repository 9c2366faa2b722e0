"""The `.env` a bare-metal installer writes, cut from an IXP manager's Ubuntu installer:
`cat >$IXPROOT/.env <<END_ENV ... END_ENV` sets APP_KEY, the database and the mail settings but
no QUEUE_CONNECTION, and config/queue.php defaults to `env('QUEUE_CONNECTION', 'sync')`. The
repository's only env file is `.env.example` (no APP_ENV): the installer's heredoc is what the
server runs with, as production, so the sync default is what runs. Quiet twin: the installer
writes QUEUE_CONNECTION=redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sited

QUEUE = """<?php

return [

    'default' => env('QUEUE_CONNECTION', 'sync'),

    'connections' => [
        'sync' => ['driver' => 'sync'],
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 90],
    ],
];
"""
JOB = """<?php

namespace IXP\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class UpdateIrrdb implements ShouldQueue
{
    public function handle(): void
    {
    }
}
"""
INSTALLER = """#!/bin/bash
IXPROOT=/srv/ixpmanager

echo -n "Creating .env file..."

cat >$IXPROOT/.env <<END_ENV
#######################################################################################
# Initial settings from the installer script on $( date )
#

APP_KEY=

# set this to false in production:
APP_DEBUG=false

APP_URL=http://${IPADDRESS}
DB_HOST=127.0.0.1
DB_DATABASE=${DBNAME}
{queue}
END_ENV

log_break && cat $IXPROOT/.env &>> /tmp/ixp-manager-install.log
"""
EXAMPLE = "APP_KEY=\nAPP_DEBUG=true\nDB_HOST=localhost\n"


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queue: str) -> list[str]:
    installer = INSTALLER.replace("{queue}", queue)
    files = {"config/queue.php": QUEUE, "app/Jobs/UpdateIrrdb.php": JOB, ".env.example": EXAMPLE,
             "tools/installers/ubuntu-lts-2404.sh": installer}  # fmt: skip
    return sited(laravel_project(tmp_path, files, monkeypatch), "laravel-queue-sync")


def test_a_sync_default_no_installer_written_env_overrides_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "")
    assert [f.split(" ", 1)[0] for f in found] == ["config/queue.php:5"]
    assert ".env (written by tools/installers/ubuntu-lts-2404.sh:6)" in found[0]


def test_quiet_twin_the_installer_writes_a_real_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "QUEUE_CONNECTION=redis") == []

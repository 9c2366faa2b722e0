"""A service the job makes itself and calls through a fluent setter. Cut from a Laravel app's
Discord integration: one job keeps `$this->discord = app()->make(DiscordService::class)` and
calls `$this->discord->user($this->user)->addRoles()`; another makes it by its name in a string
(`app()->make('App\\Services\\DiscordService')`) into a variable. user() returns `$this`, and
addRoles() reaches a `new Client` that sets no timeout (Guzzle waits forever). The quiet twin's
client sets a 'timeout'."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

PROPERTY_JOB = """<?php

namespace App\\Jobs;

use App\\Services\\DiscordService;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class DiscordRoleJob implements ShouldQueue
{
    /** @var DiscordService */
    protected $discord;

    public function handle(): void
    {
        $this->discord = app()->make(DiscordService::class);
        $this->discord->user($this->user)->addRoles();
    }
}
"""
VARIABLE_JOB = """<?php

namespace App\\Jobs;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class SubscriptionEndJob implements ShouldQueue
{
    public function handle(): void
    {
        $discord = app()->make('App\\Services\\DiscordService');
        $discord->user($this->user)->addRoles();
    }
}
"""
SERVICE = """<?php

namespace App\\Services;

use GuzzleHttp\\Client;

class DiscordService
{
    public function user($user): self
    {
        $this->user = $user;
        return $this;
    }

    public function addRoles(): void
    {
        $this->call('put', 'guilds/roles');
    }

    protected function call(string $action, string $api)
    {
        $client = new Client({options});
        $response = $client->{$action}($api, []);
        return json_decode($response->getBody());
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job: str, options: str) -> list[str]:
    service = SERVICE.replace("{options}", options)
    files = {"app/Jobs/TheJob.php": job,
             "app/Services/DiscordService.php": service}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


@pytest.mark.parametrize("job", [PROPERTY_JOB, VARIABLE_JOB], ids=["property", "string-name"])
def test_a_fluent_call_on_a_service_the_job_makes_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job: str
) -> None:
    assert run(tmp_path, monkeypatch, job, "") == ["app/Services/DiscordService.php:22"]


@pytest.mark.parametrize("job", [PROPERTY_JOB, VARIABLE_JOB], ids=["property", "string-name"])
def test_quiet_twin_client_with_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job: str
) -> None:
    assert run(tmp_path, monkeypatch, job, "['timeout' => 10]") == []

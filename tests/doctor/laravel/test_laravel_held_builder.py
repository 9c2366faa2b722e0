"""An Http builder kept in a property by the service's constructor
(`$this->http = Http::timeout(30)->retry(3, 1000)->withHeaders([...])`) and sent later
(`$this->http->get(...)`) carries its timeout and retries to the call. Cut from a panel's
TelegramService, which a job of $timeout 10 makes with `new TelegramService()`: three attempts
of 30 s outlive the job. The quiet twin's builder waits 2 s, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

JOB = """<?php

namespace App\\Jobs;

use App\\Services\\TelegramService;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class SendTelegramJob implements ShouldQueue
{
    public $timeout = 10;

    public function handle(): void
    {
        $telegramService = new TelegramService();
        $telegramService->sendMessage($this->telegramId, $this->text, 'markdown');
    }
}
"""
SERVICE = """<?php

namespace App\\Services;

use Illuminate\\Http\\Client\\PendingRequest;
use Illuminate\\Support\\Facades\\Http;

class TelegramService
{
    protected PendingRequest $http;

    public function __construct(?string $token = null)
    {
        $this->http = Http::{builder}
            ->withHeaders([
                'Accept' => 'application/json',
            ]);
    }

    public function sendMessage(int $chatId, string $text, string $parseMode = ''): void
    {
        $this->request('sendMessage', ['chat_id' => $chatId, 'text' => $text]);
    }

    protected function request(string $method, array $params = []): object
    {
        $response = $this->http->get($this->apiUrl . $method, $params);
        return $response->object();
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builder: str) -> list[str]:
    service = SERVICE.replace("{builder}", builder)
    files = {"app/Jobs/SendTelegramJob.php": JOB,
             "app/Services/TelegramService.php": service}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-not-below-job")


def test_a_held_builder_s_timeout_and_retries_reach_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "timeout(30)\n            ->retry(3, 1000)")
    assert found == ["app/Services/TelegramService.php:28"]


def test_quiet_twin_a_short_single_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(tmp_path, monkeypatch, "timeout(2)") == []

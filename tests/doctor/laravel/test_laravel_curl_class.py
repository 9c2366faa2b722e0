"""php-curl-class (`use \\Curl\\Curl; $curl = new Curl(); $curl->get($url)`) bounds each request
by Curl::DEFAULT_TIMEOUT, 30 s, unless `->setTimeout(n)` says otherwise. Cut from a proxy
panel: SendTelegramJob ($timeout = 10, $tries = 3) sends through TelegramService, whose
request() makes the handle: the 30 s call outlives the 10 s job. Quiet twins: a handle given
->setTimeout(5), and a project's own class named Curl (no php-curl-class import)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project

JOB = """<?php

namespace App\\Jobs;

use App\\Services\\TelegramService;
use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Foundation\\Bus\\Dispatchable;
use Illuminate\\Queue\\InteractsWithQueue;
use Illuminate\\Queue\\SerializesModels;

class SendTelegramJob implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;
    protected $telegramId;
    protected $text;

    public $tries = 3;
    public $timeout = 10;

    public function __construct(int $telegramId, string $text)
    {
        $this->onQueue('send_telegram');
        $this->telegramId = $telegramId;
        $this->text = $text;
    }

    public function handle()
    {
        $telegramService = new TelegramService();
        $telegramService->sendMessage($this->telegramId, $this->text, 'markdown');
    }
}
"""
SERVICE = """<?php
namespace App\\Services;

use App\\Models\\User;
{import}

class TelegramService {
    protected $api;

    public function __construct($token = '')
    {
        $this->api = 'https://api.telegram.org/bot' . config('app.telegram_token', $token) . '/';
    }

    public function sendMessage(int $chatId, string $text, string $parseMode = '')
    {
        $this->request('sendMessage', [
            'chat_id' => $chatId,
            'text' => $text,
            'parse_mode' => $parseMode
        ]);
    }

    private function request(string $method, array $params = [])
    {
        $curl = new Curl();{set}
        $curl->get($this->api . $method . '?' . http_build_query($params));
        $response = $curl->response;
        $curl->close();
        return $response;
    }
}
"""


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, imported: bool = True, set_: str = ""
) -> list[str]:
    service = SERVICE.replace("{import}", "use \\Curl\\Curl;" if imported else "")
    service = service.replace("{set}", set_)
    files = {"app/Jobs/SendTelegramJob.php": JOB,
             "app/Services/TelegramService.php": service}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return [f"{f.rule} {f.location.path}:{f.location.line} {f.message}"
            for f in report.findings if f.rule.startswith("laravel-client-timeout")]  # fmt: skip


def test_the_default_30_s_outlives_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (found,) = run(tmp_path, monkeypatch)
    assert found.startswith(
        "laravel-client-timeout-not-below-job app/Services/TelegramService.php:27 job "
        "SendTelegramJob calls $curl->get() in TelegramService::sendMessage() bounded at 30 s"
    )


def test_a_handle_given_a_shorter_timeout_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, set_="\n        $curl->setTimeout(5);") == []


def test_a_class_of_the_project_named_curl_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, imported=False) == []

"""A raw curl call without CURLOPT_TIMEOUT is reported where its handle is made (curl_init),
where the timeout would be set, as a Guzzle client is reported at its `new Client`
(CONVENTION.md). Cut from a queued listener's analytics call: curl_init(), curl_setopt_array
with CURLOPT_URL from config, curl_exec. The quiet twin sets CURLOPT_TIMEOUT."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

LISTENER = """<?php

namespace App\\Listeners\\Payment;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class PaymentNotification implements ShouldQueue
{
    public function handle($event)
    {
        $this->sendAnalytics('v=1');
    }

    private function sendAnalytics($url)
    {
        $data = mb_convert_encoding($url, 'UTF-8');
        $curl = curl_init();

        $opts = [
            CURLOPT_URL => config('ninja.google_analytics_url'),
            CURLOPT_RETURNTRANSFER => true,{timeout}
        ];

        curl_setopt_array($curl, $opts);
        curl_exec($curl);
        curl_close($curl);
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str) -> list[str]:
    listener = LISTENER.replace("{timeout}", timeout)
    files = {"app/Listeners/Payment/PaymentNotification.php": listener}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


def test_curl_without_a_timeout_is_reported_on_curl_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "") == ["app/Listeners/Payment/PaymentNotification.php:17"]


def test_quiet_twin_curlopt_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(tmp_path, monkeypatch, "\n            CURLOPT_TIMEOUT => 10,") == []

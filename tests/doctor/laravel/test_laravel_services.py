"""HTTP calls a job makes through the project's own service class, one level deep. Cut from
SolomonOjigbo/parish-hub-api (app/Jobs/SendBulkSmsJob.php: handle(SmsService $smsService)
calls $smsService->send(); app/Services/SmsService.php posts with Http::post and no timeout,
so Laravel's 30 s default). The constructor-promoted, assigned and app(SmsService::class)
forms reach the same service the other ways. Each quiet twin's service sets timeout(10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project

JOB = """<?php

namespace App\\Jobs;

use App\\Models\\Member;
use App\\Services\\SmsService;
use Illuminate\\Bus\\Queueable;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class SendBulkSmsJob implements ShouldQueue
{
    use Queueable;

    public $timeout = 25;

    {constructor}

    public function handle({parameter}): void
    {
        $phoneNumbers = Member::whereIn('id', $this->memberIds)->pluck('phone_number')->toArray();
        $result = {receiver}->send($phoneNumbers, $this->message);
    }
}
"""
SERVICE = """<?php

namespace App\\Services;

use Illuminate\\Support\\Facades\\Http;

class SmsService
{
    public function send(array $phoneNumbers, string $message): array
    {
        foreach ($phoneNumbers as $phoneNumber) {
            $response = $this->post($phoneNumber, $message);
        }
        return [];
    }

    private function post(string $phoneNumber, string $message)
    {
        return Http::{bound}post('https://api.ng.termii.com/api/sms/send', [
            'to' => $phoneNumber,
            'sms' => $message,
        ]);
    }
}
"""
UNIT = "[Service]\nExecStart=/usr/bin/php /srv/app/artisan queue:work\nTimeoutStopSec=90\n"
FORMS = {
    "handle": ("public function __construct(public array $memberIds, public string $message) {}",
               "SmsService $smsService", "$smsService"),
    "promoted": ("public function __construct(private SmsService $sms) {}", "", "$this->sms"),
    "assigned": ("protected $sms;\n    public function __construct(SmsService $sms)\n    {\n"
                 "        $this->sms = $sms;\n    }", "", "$this->sms"),
    "container": ("", "", "app(SmsService::class)"),
}  # fmt: skip


def found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, bound: str
) -> tuple[list[str], list[str]]:
    constructor, parameter, receiver = FORMS[form]
    job = (JOB.replace("{constructor}", constructor).replace("{parameter}", parameter)
           .replace("{receiver}", receiver))  # fmt: skip
    files = {"app/Jobs/SendBulkSmsJob.php": job,
             "app/Services/SmsService.php": SERVICE.replace("{bound}", bound),
             "deploy/worker.service": UNIT}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    rules = sorted(
        f"{f.rule} {f.location.path}:{f.location.line}"
        for f in report.findings
        if f.rule.startswith("laravel-client")
    )
    return rules, [s.reason for s in report.skipped if "not followed" in s.reason]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_service_call_without_timeout_is_the_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    rules, unfollowed = found(tmp_path, monkeypatch, form, "")
    # Laravel's Http client waits 30 s by default: longer than the job's 25 s.
    assert rules == ["laravel-client-timeout-not-below-job app/Services/SmsService.php:19"]
    assert unfollowed == []  # followed, so not said as "not followed"


@pytest.mark.parametrize("form", sorted(FORMS))
def test_quiet_twin_the_service_sets_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    assert found(tmp_path, monkeypatch, form, "timeout(10)->") == ([], [])

"""One finding a place: two queued jobs that both call a shared mailer reach the same
`new Client()` line (cut from invoiceninja's notification jobs that all send through
NinjaMailerJob); the user changes that line once, so the doctor reports it once and names both
jobs. The twin: two clients on two lines stay two findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose
from tenure.doctor.model import Finding, Source
from tenure.doctor.one_place import one_finding_a_place

MAILER = """<?php

namespace App\\Services;

use GuzzleHttp\\Client;

class Mailer
{
    public function send($to)
    {
        $client = new Client();
        $client->post('https://mail.example/send', ['json' => ['to' => $to]]);
    }
}
"""
JOB = """<?php

namespace App\\Jobs;

use App\\Services\\Mailer;
use Illuminate\\Contracts\\Queue\\ShouldQueue;

class {name} implements ShouldQueue
{
    public function handle(): void
    {
        (new Mailer())->send('someone@example.com');
    }
}
"""


def test_a_line_two_jobs_reach_is_one_finding_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"artisan": "<?php\n", "composer.json": "{}\n", "app/Services/Mailer.php": MAILER}
    for name in ("SendInvoice", "SendReminder"):
        files[f"app/Jobs/{name}.php"] = JOB.replace("{name}", name)
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)
    found = [f for f in report.findings if f.rule == "laravel-client-timeout-missing"]
    assert [(f.location.path, f.location.line) for f in found] == [("app/Services/Mailer.php", 11)]
    assert "SendInvoice" in found[0].message and "SendReminder" in found[0].message


def _finding(line: int | None, job: str, severity: str = "warning") -> Finding:
    return Finding("client-timeout-missing", severity, f"{job} calls it.", "fix",  # type: ignore[arg-type]
                   Source("tasks.py", line), job=job)  # fmt: skip


def test_two_lines_stay_two_findings_and_the_worst_severity_wins() -> None:
    merged = one_finding_a_place(
        [_finding(3, "a"), _finding(9, "b"), _finding(3, "c", "error"), _finding(None, "d"),
         _finding(None, "e")]
    )  # fmt: skip
    assert [(f.location.line, f.severity, f.job) for f in merged] == [
        (3, "error", "a"), (9, "warning", "b"), (None, "warning", "d"), (None, "warning", "e")
    ]  # fmt: skip
    assert merged[0].message == "a calls it. The same line is reached from c too."
    assert merged[1].message == "b calls it."


def test_many_jobs_are_counted_past_five() -> None:
    merged = one_finding_a_place([_finding(3, f"job{i}") for i in range(9)])
    assert merged[0].message.endswith("job1, job2, job3, job4, job5 and 3 more jobs too.")

"""Which of a job's own methods handle() reaches: through a fluent chain on `$this`
(`$this->preFlightChecks()->importData()`), and through a call by a computed name
(`$this->{$method}()`, an import dispatching on its sections), which may reach any method.
Cut from a company-import job whose documents are fetched with `@file_get_contents($url)` from
the old instance's storage URL. The quiet twin: the fetching method is never called."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

JOB = """<?php

namespace App\\Jobs\\Company;

use Illuminate\\Contracts\\Queue\\ShouldQueue;

class CompanyImport implements ShouldQueue
{
    private $importables = ['documents'];

    public function handle()
    {
        {body}
    }

    private function preFlightChecks()
    {
        return $this;
    }

    private function importData()
    {
        foreach ($this->importables as $import) {
            $method = "import_{$import}";
            $this->{$method}();
        }
        return $this;
    }

    private function import_documents()
    {
        $storage_url = $this->getObject('storage_url', true);
        $url = $storage_url . $this->document->url;
        $file = @file_get_contents($url);
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> list[str]:
    job = JOB.replace("{body}", body)
    files = {"app/Jobs/Company/CompanyImport.php": job}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


def test_a_fluent_chain_then_a_computed_name_reach_the_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "$this->preFlightChecks()->importData();"
    assert run(tmp_path, monkeypatch, body) == ["app/Jobs/Company/CompanyImport.php:34"]


def test_quiet_twin_the_fetching_method_is_never_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "$this->preFlightChecks();") == []

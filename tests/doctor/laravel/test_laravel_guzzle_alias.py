"""Guzzle's client imported under another name, cut from an IXP manager's RIPE Atlas service:
`use GuzzleHttp\\{Client as GuzzleHttp, Exception\\RequestException};` (a group use), then
`$client = new GuzzleHttp();` and `$client->request('GET', ...)` in a service method a job
resolves with `App::make(ApiCall::class)`. Raw Guzzle waits forever; the finding goes on the
`new` line, where the 'timeout' option belongs (CONVENTION.md section 3). The plain aliased
`use GuzzleHttp\\Client as Http;` is the same class. Quiet twin: the client sets a 'timeout'."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

JOB = """<?php

namespace App\\Jobs\\RipeAtlas;

use App\\Services\\RipeAtlas\\ApiCall;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Support\\Facades\\App;

class UpdateProbes implements ShouldQueue
{
    public function handle(): void
    {
        $probes = App::make(ApiCall::class)->queryAtlasForProbes($this->customer, 4);
    }
}
"""
SERVICE = """<?php

namespace App\\Services\\RipeAtlas;

{use}

class ApiCall
{
    public function queryAtlasForProbes($customer, int $protocol): array
    {
        $client = new GuzzleHttp({options});
        $asn = $customer->autsys;

        try {
            $req = $client->request('GET', "https://atlas.ripe.net/api/v2/probes/?asn_v{$protocol}={$asn}");
            return ['error' => false, 'response' => json_decode($req->getBody()->getContents())];
        } catch (RequestException $e) {
            return ['error' => true, 'response' => $e->getMessage()];
        }
    }
}
"""
GROUP = "use GuzzleHttp\\{\n    Client as GuzzleHttp,\n    Exception\\RequestException\n};"
PLAIN = "use GuzzleHttp\\Client as GuzzleHttp;\nuse GuzzleHttp\\Exception\\RequestException;"


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: str, options: str) -> list[str]:
    service = SERVICE.replace("{use}", use).replace("{options}", options)
    files = {"app/Jobs/RipeAtlas/UpdateProbes.php": JOB,
             "app/Services/RipeAtlas/ApiCall.php": service}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


@pytest.mark.parametrize("use", [GROUP, PLAIN], ids=["group-use", "alias"])
def test_an_aliased_guzzle_client_without_a_timeout_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: str
) -> None:
    at = 11 + use.count("\n")
    assert run(tmp_path, monkeypatch, use, "") == [f"app/Services/RipeAtlas/ApiCall.php:{at}"]


@pytest.mark.parametrize("use", [GROUP, PLAIN], ids=["group-use", "alias"])
def test_quiet_twin_client_with_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: str
) -> None:
    assert run(tmp_path, monkeypatch, use, "['timeout' => 10]") == []

"""A queued listener that makes a controller to call one of its methods, handing it a Guzzle
client: `(new TenantController(new Client, new FaveoCloud))->destroyTenant(...)` (cut from
faveo-invoicing's CloudDeletion). The client passed as an argument sends nothing where it is
written; the method reached through `(new X(...))->m()` is followed, and each client made
there without a timeout is reported where it is made. The quiet twin's clients carry one."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

LISTENER = """<?php

namespace App\\Listeners;

use App\\Http\\Controllers\\Tenancy\\TenantController;
use GuzzleHttp\\Client;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Http\\Request;

class CloudDeletion implements ShouldQueue
{
    public function handle($event): void
    {
        (new TenantController(new Client, new FaveoCloud))->destroyTenant($event->request);
    }
}
"""
CONTROLLER = """<?php

namespace App\\Http\\Controllers\\Tenancy;

use GuzzleHttp\\Client;

class TenantController extends Controller
{
    public function __construct(Client $client, FaveoCloud $cloud)
    {
        $this->client = $client;
        $this->cloud = $cloud;
    }

    public function destroyTenant(Request $request)
    {
        $client = new Client([{options}]);
        $response = $client->request(
            'DELETE',
            $this->cloud->cloud_central_domain.'/tenants', ['form_params' => []]
        );
        $this->deleteCronForTenant($request->input('id'));
    }

    private function deleteCronForTenant($tenantId)
    {
        $client = new Client([{options}]);
        if (strpos($tenantId, 'cloud')) {
            $client->request('GET', env('CLOUD__DELETE_JOB_URL_NORMAL'), []);
        } else {
            $client->request('GET', env('CLOUD__DELETE_JOB_URL_CUSTOM'), []);
        }
    }
}
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: str) -> list[str]:
    files = {"app/Listeners/CloudDeletion.php": LISTENER,
             "app/Http/Controllers/Tenancy/TenantController.php":
                 CONTROLLER.replace("{options}", options)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-client-timeout-missing")


def test_clients_of_the_followed_controller_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = "app/Http/Controllers/Tenancy/TenantController.php"
    assert run(tmp_path, monkeypatch, "") == [f"{at}:17", f"{at}:27"]


def test_quiet_twin_requests_with_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "'timeout' => 10") == []

"""Acceptance 4: unauthenticated remote access and cross-site POSTs are refused."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from tenure.web import create_app
from tenure.web.security import refusal_to_bind
from web.helpers import WebProject, status
from web.launch import cli

TOKEN = "correct-horse-battery-staple"
LOCAL = {"base_url": "http://127.0.0.1:8000", "client": ("127.0.0.1", 50000)}


def failed_job(project: WebProject) -> str:
    from web.test_pages import failed_job as make

    return make(project)


def test_without_a_token_only_this_machine_is_answered(project: WebProject) -> None:
    web = create_app(project.app)
    remote = TestClient(web, base_url="http://127.0.0.1:8000", client=("203.0.113.7", 5000))
    assert remote.get("/").status_code == 403
    assert remote.get("/api/overview").status_code == 403
    # DNS rebinding: a loopback client, but a page from another site named in Host
    rebound = TestClient(web, base_url="http://evil.example:8000", client=("127.0.0.1", 5000))
    assert rebound.get("/api/overview").status_code == 403
    assert TestClient(web, **LOCAL).get("/api/overview").status_code == 200  # type: ignore[arg-type]


def test_cross_site_posts_are_refused(project: WebProject) -> None:
    job_id = failed_job(project)
    client = TestClient(create_app(project.app), **LOCAL)  # type: ignore[arg-type]
    client.get("/failed")
    token = client.cookies.get("tenure_csrf")
    assert token
    form = {"csrf": token, "confirmed": "1"}
    url = f"/jobs/{job_id}/retry"

    assert client.post(url, data={"confirmed": "1"}).status_code == 403  # no CSRF token
    assert client.post(url, data={**form, "csrf": "x" * 43}).status_code == 403  # wrong one
    evil = {"origin": "https://evil.example"}
    assert client.post(url, data=form, headers=evil).status_code == 403
    assert client.post(url, data=form, headers={"sec-fetch-site": "cross-site"}).status_code == 403
    assert client.post(url, data=form, headers={"origin": "null"}).status_code == 403
    # A cross-site form can only send form encodings: the JSON API refuses them.
    api = f"/api/jobs/{job_id}/retry"
    assert client.post(api, data={"x": "1"}).status_code == 415
    assert client.post(api, content=b"", headers={"content-type": "text/plain"}).status_code == 415
    assert client.post(api, json={}, headers=evil).status_code == 403
    assert project.app.get_job(job_id).state == "failed"

    same = {"origin": "http://127.0.0.1:8000"}
    ok = client.post(url, data=form, headers=same, follow_redirects=False)
    assert ok.status_code == 303
    assert project.app.get_job(job_id).state == "queued"


def test_with_a_token_every_request_needs_it(project: WebProject) -> None:
    job_id = failed_job(project)
    web = create_app(project.app, auth_token=TOKEN)
    remote = TestClient(web, base_url="http://dash.example", client=("203.0.113.7", 5000))
    page = remote.get("/failed", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=/failed"
    assert remote.get("/api/failed").status_code == 401
    assert remote.post(f"/api/jobs/{job_id}/retry", json={}).status_code == 401
    assert remote.get("/api/overview", headers={"authorization": "Bearer nope"}).status_code == 401
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert remote.get("/api/overview", headers=bearer).status_code == 200

    login = remote.get("/login")
    assert login.status_code == 200 and 'type="password"' in login.text
    csrf = remote.cookies.get("tenure_csrf")
    bad = remote.post("/login?next=/failed", data={"csrf": csrf, "token": "wrong"})
    assert bad.status_code == 401 and "not the one" in bad.text
    good = remote.post(
        "/login?next=/failed", data={"csrf": csrf, "token": TOKEN}, follow_redirects=False
    )
    assert good.status_code == 303 and good.headers["location"] == "/failed"
    assert TOKEN not in (remote.cookies.get("tenure_session") or "")
    assert job_id in remote.get("/failed").text
    nasty = remote.post("/login?next=//evil.example", data={"csrf": csrf, "token": TOKEN},
                        follow_redirects=False)  # fmt: skip
    assert nasty.headers["location"] == "/"


def test_binding_beyond_loopback_needs_a_token() -> None:
    assert refusal_to_bind("127.0.0.1", None) is None
    assert refusal_to_bind("::1", None) is None
    assert refusal_to_bind("localhost", None) is None
    why = refusal_to_bind("0.0.0.0", None)
    assert why is not None and "refusing to listen on 0.0.0.0 without --auth" in why
    assert refusal_to_bind("0.0.0.0", TOKEN) is None
    short = refusal_to_bind("0.0.0.0", "123")
    assert short is not None and "at least 12 characters" in short


def test_the_command_refuses_to_start_on_a_public_address(project: WebProject) -> None:
    result = CliRunner().invoke(cli, ["dashboard", "--app", project.spec, "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to listen on 0.0.0.0 without --auth" in result.output


def outward_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: UDP connect only picks a route
            address: str = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.mark.slow
def test_a_real_dashboard_on_all_interfaces_refuses_anonymous_visitors(
    project: WebProject,
) -> None:
    refused = project.dashboard("--host", "0.0.0.0")
    assert refused.proc.wait(timeout=30) == 2
    assert "refusing to listen on 0.0.0.0 without --auth" in refused.log()

    address = outward_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to test remote access with")
    served = project.dashboard("--host", "0.0.0.0", env={"TENURE_DASHBOARD_TOKEN": TOKEN})
    served.wait_ready()
    remote = f"http://{address}:{served.port}"
    assert status(remote + "/") == 303
    assert status(remote + "/api/overview") == 401
    assert status(remote + "/api/overview", {"authorization": f"Bearer {TOKEN}"}) == 200
    request = urllib.request.Request(
        remote + "/api/overview", headers={"authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert "counts" in json.load(response)


@pytest.mark.slow
def test_a_real_dashboard_on_loopback_serves_without_a_token(project: WebProject) -> None:
    server = project.dashboard()
    server.wait_ready()
    assert status(server.base + "/") == 200
    assert status(server.base + "/api/openapi.json") == 200
    address = outward_address()
    if address is not None:
        assert status(f"http://{address}:{server.port}/") == 0  # not even listening there

"""The dashboard's periodic page, through Starlette's TestClient on a real SQLite store whose
periodic state a real ticker wrote on a clock the test owns."""

from __future__ import annotations

import html

from starlette.testclient import TestClient

from tenure.core.words import clock_text
from tenure.periodic import PeriodicTicker, run_id
from tenure.testing import drain, freeze
from web.helpers import WebProject

START = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC, a due time of "*/5 * * * *"


def test_the_page_says_how_to_define_one_when_the_app_has_none(client: TestClient) -> None:
    page = client.get("/periodic")
    assert page.status_code == 200
    assert "No periodic job in this app" in page.text and "--app MODULE:ATTR" in page.text
    assert '<a href="/periodic" aria-current="page">Periodic</a>' in page.text


def test_the_page_shows_schedule_next_due_and_the_latest_run(
    project: WebProject, client: TestClient
) -> None:
    app = project.app

    @app.periodic("*/5 * * * *", name="refresh_rates")
    def refresh_rates() -> None: ...

    @app.periodic("@daily", tz="Europe/Rome", catch_up="none", name="nightly")
    def nightly() -> None: ...

    clock = freeze(app, START + 60)
    ticker = PeriodicTicker(app)
    ticker.run_once(app.now())  # first seen: recorded
    clock.advance(300)
    ticker.run_once(app.now())  # 08:05 dispatched
    assert [j.state for j in drain(app)] == ["succeeded"]

    page = html.unescape(client.get("/periodic").text)
    row = page.split('id="periodic-refresh_rates"')[1].split("</tr>")[0]
    assert "*/5 * * * *" in row and "(UTC)" in row
    assert clock_text(START + 600) in row  # next due 08:10
    assert f'href="/jobs/{run_id("refresh_rates", START + 300)}"' in row
    assert clock_text(START + 360) in row and "succeeded" in row
    nightly_row = page.split('id="periodic-nightly"')[1].split("</tr>")[0]
    assert "Europe/Rome, no catch-up" in nightly_row and "none yet" in nightly_row
    api = client.get("/api/periodic").json()["periodic"]
    assert [p["name"] for p in api] == ["nightly", "refresh_rates"]
    assert api[1]["next_due"] == START + 600 and api[1]["last_state"] == "succeeded"
    assert api[1]["last_job_id"] == run_id("refresh_rates", START + 300)
    assert api[0]["catch_up"] == "none" and api[0]["last_job_id"] is None

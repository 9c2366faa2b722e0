"""The dashboard's retention view, through Starlette's TestClient on a real SQLite store: the
App's settings, the jobs that set their own, and the rows past their age counted as
`tenure prune --dry-run` counts them (nothing deleted)."""

from __future__ import annotations

import html
from datetime import timedelta

from starlette.testclient import TestClient

import tenure
from tenure.testing import drain
from tenure.web import create_app
from tenure.web.retention_page import keep_text
from web.helpers import WebProject

from e2e.helpers import wait_until


def test_retention_reads_as_a_person_says_it() -> None:
    assert keep_text(None) == "forever"
    assert keep_text(86_400.0) == "1 day" and keep_text(14 * 86_400.0) == "14 days"
    assert keep_text(3600.0) == "1 h" and keep_text(90.0) == "90 s" and keep_text(0.0) == "0 s"
    assert keep_text(1.5 * 86_400) == "36 h" and keep_text(0.25) == "0.25 s"


def test_the_page_shows_settings_overrides_and_what_is_past_its_age(
    project: WebProject, client: TestClient
) -> None:
    app = project.app

    @app.job(name="receipt", queue="mail", keep_succeeded=timedelta(hours=2))
    def receipt() -> None: ...

    @app.job(name="audit", keep_failed=None)
    def audit() -> None: ...

    page = html.unescape(client.get("/retention").text)
    assert '<a href="/retention" aria-current="page">Retention</a>' in page
    assert '<dd id="keep-succeeded">1 day</dd>' in page  # the defaults
    assert '<dd id="keep-failed">14 days</dd>' in page
    receipt_row = page.split('id="keep-receipt"')[1].split("</tr>")[0]
    assert "queue mail" in receipt_row and "2 h" in receipt_row
    assert "14 days <span" in receipt_row and "(the App's)" in receipt_row
    audit_row = page.split('id="keep-audit"')[1].split("</tr>")[0]
    assert "forever" in audit_row and "1 day" in audit_row
    assert 'id="keep-tick"' not in page  # a job without its own is not listed
    assert "does not record when pruning last ran" in page

    # Three jobs that may go as soon as they end, one kept for an hour.
    for n in range(3):
        project.jobs.done.options(keep_succeeded=0).dispatch(f"gone {n}")
    project.jobs.done.options(keep_succeeded=3600).dispatch("kept")
    assert [j.state for j in drain(app)] == ["succeeded"] * 4
    wait_until(lambda: app.prune(dry_run=True).jobs == 3, 30, "the three to be past their age")
    page = html.unescape(client.get("/retention").text)
    assert '<tr id="due-jobs"><th scope="row">jobs</th><td>3</td></tr>' in page
    assert '<tr id="due-attempts"><th scope="row">attempts</th><td>3</td></tr>' in page
    assert app.counts()["succeeded"] == 4  # counted, not deleted
    api = client.get("/api/retention").json()
    assert api["keep_succeeded"] == 86_400.0 and api["keep_failed"] == 14 * 86_400.0
    assert api["due"]["jobs"] == 3 and api["last_prune"] is None
    assert {o["job"]: o["sets"] for o in api["overrides"]} == {
        "audit": ["keep_failed"],
        "receipt": ["keep_succeeded"],
    }
    assert app.prune().jobs == 3
    assert "<td>0</td>" in client.get("/retention").text


def test_an_app_that_keeps_everything_says_forever(project: WebProject) -> None:
    app = tenure.App(project.url, keep_succeeded=None, keep_failed=None)
    try:
        web = create_app(app)
        with TestClient(web, base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000)) as c:
            page = c.get("/retention").text
    finally:
        app.close()
    assert '<dd id="keep-succeeded">forever</dd>' in page
    assert '<dd id="keep-failed">forever</dd>' in page
    assert "No job in this app sets" in page

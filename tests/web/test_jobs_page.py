"""The dashboard's job list: filters by queue, state, name and time, search by id, queue
names that link to their jobs, stored text escaped; through Starlette's TestClient on a real
SQLite store."""

from __future__ import annotations

from starlette.testclient import TestClient

from web.helpers import WebProject


def test_the_job_list_filters_and_searches(project: WebProject, client: TestClient) -> None:
    mail = [project.jobs.tick.options(queue="mail").dispatch(i).id for i in range(3)]
    report = project.jobs.tick.options(queue="reports", delay=600).dispatch(9).id
    page = client.get("/jobs")
    assert page.status_code == 200 and all(i in page.text for i in [*mail, report])
    by_queue = client.get("/jobs", params={"queue": "mail"}).text
    assert all(i in by_queue for i in mail) and report not in by_queue
    by_state = client.get("/jobs", params={"state": "scheduled"}).text
    assert report in by_state and mail[0] not in by_state
    assert report not in client.get("/jobs", params={"name": "nosuch"}).text
    assert mail[0] in client.get("/jobs", params={"name": "TICK", "since": "1h"}).text
    found = client.get("/jobs", params={"id": mail[1]}, follow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"/jobs/{mail[1]}"
    missing = client.get("/jobs", params={"id": "nosuchid"})
    assert missing.status_code == 200 and "No job with id nosuchid." in missing.text
    bad = client.get("/jobs", params={"state": "exploded"})
    assert bad.status_code == 400 and "state: expected one of queued" in bad.text
    overview = client.get("/").text
    assert '<a href="/jobs?queue=mail">mail</a>' in overview  # queue names link to their jobs


def test_the_job_list_prints_stored_text_as_text(project: WebProject, client: TestClient) -> None:
    project.jobs.tick.options(queue="<b>q</b>").dispatch(1)
    page = client.get("/jobs").text
    assert "&lt;b&gt;q&lt;/b&gt;" in page and "<b>q</b>" not in page


def test_a_mistyped_query_parameter_is_named_not_ignored(
    project: WebProject, client: TestClient
) -> None:
    """`?stat=running` used to list every job as though no filter was asked for, and
    `?limit=abc` quietly became the default: a newcomer's typo looked like an answer."""
    project.jobs.tick.dispatch(1)
    page = client.get("/jobs", params={"stat": "running"})
    assert page.status_code == 400
    assert "unknown parameter &#39;stat&#39;" in page.text
    assert "id, queue, state, name, since" in page.text
    api = client.get("/api/jobs", params={"limt": "5"})
    assert api.status_code == 400
    assert api.json()["error"] == (
        "unknown parameter 'limt'; the accepted ones are state, queue, limit"
    )
    for path in ["/api/jobs", "/api/batches", "/api/failed"]:
        bad = client.get(path, params={"limit": "abc"})
        assert bad.status_code == 400, path
        assert bad.json()["error"] == "limit: expected a whole number, got 'abc'"
    assert client.get("/api/jobs", params={"limit": "5", "state": "queued"}).status_code == 200
    assert client.get("/jobs", params={"state": "queued", "notice": "x"}).status_code == 200


def test_a_mistyped_page_is_not_called_forgotten(client: TestClient) -> None:
    """A typo in the address said 'No such page /jobz in this store. It may have been
    forgotten.': pages are not stored, and nothing was forgotten."""
    page = client.get("/jobz")
    assert page.status_code == 404
    assert "forgotten" not in page.text and "in this store" not in page.text
    assert "The dashboard has no page /jobz" in page.text
    job = client.get("/jobs/nosuchid")
    assert job.status_code == 404 and "No job with id nosuchid in this store" in job.text


def test_an_action_on_an_unknown_id_is_404_like_cancel(
    project: WebProject, client: TestClient
) -> None:
    """Cancel answered an unknown id with 404; retry, forget and a batch's cancel with 409
    ("not in a state that allows it"), forget and the batch's with no reason at all."""
    json = {"Content-Type": "application/json"}
    for path, what in [
        ("/api/jobs/nosuch/cancel", "job"),
        ("/api/jobs/nosuch/retry", "job"),
        ("/api/jobs/nosuch/forget", "job"),
        ("/api/batches/nosuch/cancel", "batch"),
    ]:
        answer = client.post(path, headers=json)
        assert answer.status_code == 404, path
        assert answer.json() == {"error": f"no {what} with id 'nosuch'"}, path
    queued = project.jobs.tick.dispatch(1).id
    live = client.post(f"/api/jobs/{queued}/forget", headers=json)
    assert live.status_code == 409
    assert live.json()["reason"] == f"job {queued} is queued, not finished; nothing deleted"
    spec = client.get("/api/openapi.json").json()
    assert "404" in spec["paths"]["/api/jobs/{job_id}/forget"]["post"]["responses"]

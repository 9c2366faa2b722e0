"""The dashboard's cancel button on a job and its pause/resume buttons on the overview, through
Starlette's TestClient on a real SQLite store: POST + CSRF, confirmed, then a redirect."""

from __future__ import annotations

from starlette.testclient import TestClient

from tenure.core.records import WorkerRef
from web.conftest import csrf_of
from web.helpers import WebProject

WORKER = WorkerRef("worker-t1", "host-a", 4242)


def test_cancel_a_queued_job_from_its_page(project: WebProject, client: TestClient) -> None:
    job_id = project.jobs.tick.dispatch(1).id
    assert "Cancel job…" in client.get(f"/jobs/{job_id}").text
    token = csrf_of(client)
    assert client.post(f"/jobs/{job_id}/cancel", data={"confirmed": "1"}).status_code == 403
    page = client.post(f"/jobs/{job_id}/cancel", data={"csrf": token, "confirmed": "0"})
    assert page.status_code == 200 and f"Cancel job {job_id}?" in page.text
    assert project.app.get_job(job_id).state == "queued"
    done = client.post(
        f"/jobs/{job_id}/cancel", data={"csrf": token, "confirmed": "1"}, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"].endswith("notice=job-cancelled")
    assert project.app.get_job(job_id).state == "cancelled"
    shown = client.get(done.headers["location"]).text
    assert "it will not run" in shown and "Cancel job…" not in shown
    again = client.post(
        f"/jobs/{job_id}/cancel", data={"csrf": token, "confirmed": "1"}, follow_redirects=False
    )
    assert again.headers["location"].endswith("notice=job-finished")


def test_cancel_a_running_job_says_its_worker_stops_it(
    project: WebProject, client: TestClient
) -> None:
    job_id = project.jobs.tick.dispatch(2).id
    project.app.store.reserve(queues=["default"], worker=WORKER, lease=30)
    token = csrf_of(client)
    done = client.post(
        f"/jobs/{job_id}/cancel", data={"csrf": token, "confirmed": "1"}, follow_redirects=False
    )
    assert done.headers["location"].endswith("notice=job-stopping")
    assert "its worker stops it" in client.get(done.headers["location"]).text


def test_pause_and_resume_a_queue_from_the_overview(
    project: WebProject, client: TestClient
) -> None:
    project.jobs.tick.dispatch(3)
    page = client.get("/").text
    assert "Oldest ready" in page and "Pause…" in page
    token = csrf_of(client)
    asked = client.post("/queues/pause", data={"csrf": token, "queue": "default"})
    assert "Pause queue &#39;default&#39;?" in asked.text
    assert 'name="queue" value="default"' in asked.text  # sent again with the confirmation
    done = client.post(
        "/queues/pause",
        data={"csrf": token, "queue": "default", "confirmed": "1"},
        follow_redirects=False,
    )
    assert done.headers["location"].endswith("notice=queue-paused")
    assert [w.paused for w in project.app.queue_waits()] == [True]
    overview = client.get("/").text
    assert "Resume…" in overview and 'badge bad">paused' in overview
    assert client.get("/api/overview").json()["queues"][0]["paused"] is True
    client.post("/queues/resume", data={"csrf": token, "queue": "default", "confirmed": "1"})
    assert [w.paused for w in project.app.queue_waits()] == [False]
    unnamed = client.post(
        "/queues/pause", data={"csrf": token, "confirmed": "1"}, follow_redirects=False
    )
    assert unnamed.headers["location"].endswith("notice=queue-unnamed")

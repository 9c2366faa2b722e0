"""The pages and the JSON behind them, through Starlette's TestClient on a real SQLite store.
Attempts are opened and ended through the Store API itself, as a worker would."""

from __future__ import annotations

import base64
import os
import re
from typing import Any

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from conformance.helpers import wait_until
from tenure.core import causes
from tenure.core.records import Ending, WorkerRef
from tenure.web import create_app
from web.conftest import csrf_of
from web.helpers import WebProject

WORKER = WorkerRef("worker-t1", "host-a", 4242)


def run_attempt(
    app: Any, job_id: str, outcome: str, error: str = "boom", queue: str = "default"
) -> None:
    [r] = app.store.reserve(queues=[queue], worker=WORKER, lease=30)
    assert r.job_id == job_id
    if outcome == "succeeded":
        assert app.store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    else:
        app.store.end_attempt(
            Ending(
                job_id=r.job_id,
                token=r.token,
                outcome=outcome,
                error=error,
                traceback=f'Traceback (most recent call last):\n  File "jobs.py"\n{error}\n',
            )
        )


def failed_job(project: WebProject, n: int = 1, queue: str = "default") -> str:
    job_id: str = project.jobs.always_fails.options(queue=queue).dispatch(n).id
    run_attempt(project.app, job_id, "failed", f"ValueError: row {n} is bad", queue)
    assert project.app.get_job(job_id).state == "failed"
    return job_id


def test_every_page_renders_with_navigation_and_landmarks(
    project: WebProject, client: TestClient
) -> None:
    failed = failed_job(project)
    batch = project.app.batch([project.jobs.tick.sig(i) for i in range(3)], name="b", total=5)
    for path in ("/", "/batches", f"/batches/{batch.id}", f"/jobs/{failed}", "/failed", "/doctor"):
        page = client.get(path)
        assert page.status_code == 200, path
        html = page.text
        assert '<html lang="en">' in html
        assert '<main id="main"' in html and '<nav aria-label="Main">' in html
        assert 'name="viewport"' in html
        assert 'aria-current="page"' in html or path.startswith("/jobs")
        # offline: nothing is loaded from another host
        assert not re.search(r'(src|href)="(https?:)?//', html), path
    assert client.get("/static/dashboard.js").status_code == 200
    assert client.get("/jobs/nope").status_code == 404
    assert client.get("/api/jobs/nope").json() == {"error": "no job with id 'nope'"}
    for unknown in ("/no/such/page", "/batches/nope"):
        missing = client.get(unknown)
        assert missing.status_code == 404, unknown  # the not-found page, not a 500
        assert "<h1>Not found</h1>" in missing.text and '<nav aria-label="Main">' in missing.text
    assert "The dashboard has no page /no/such/page" in client.get("/no/such/page").text
    assert client.get("/api/no/such").json() == {"error": "not found"}
    bogus = client.get("/api/jobs?state=bogus")
    assert bogus.status_code == 400
    assert "state: expected one of queued" in bogus.json()["error"]


def test_overview_counts_workers_and_rate(project: WebProject, client: TestClient) -> None:
    failed_job(project)
    project.jobs.tick.dispatch(1)
    project.jobs.tick.options(delay=600).dispatch(2)
    data = client.get("/api/overview").json()
    [row] = data["queues"]
    assert (row["waiting"], row["scheduled"], row["failed"]) == (1, 1, 1)
    assert data["active"] is True
    assert [w["id"] for w in data["workers"]] == []  # reserve alone registers no worker
    html = client.get("/").text
    assert "Waiting" in html and "Finished / min" in html
    assert "No worker is running" in html
    assert 'data-live="on"' in html


def test_overview_has_a_row_per_queue_and_totals_that_are_their_sum(
    project: WebProject, client: TestClient
) -> None:
    failed_job(project, queue="mail")
    project.jobs.tick.options(queue="mail").dispatch(1)
    project.jobs.tick.options(queue="reports", delay=600).dispatch(2)
    done = project.jobs.tick.options(queue="zzz-done").dispatch(3).id
    run_attempt(project.app, done, "succeeded", queue="zzz-done")
    data = client.get("/api/overview").json()
    rows = {r["name"]: r for r in data["queues"]}
    assert list(rows) == ["mail", "reports", "zzz-done"]  # sorted by name
    assert (rows["mail"]["waiting"], rows["mail"]["failed"]) == (1, 1)
    assert rows["reports"]["scheduled"] == 1
    assert rows["zzz-done"]["succeeded"] == 1  # a queue with finished jobs only keeps its row
    assert data["counts"] == project.app.counts()
    assert data["counts"]["queued"] == sum(r["waiting"] for r in data["queues"])
    html = client.get("/").text
    linked = '<th scope="row"><a href="/jobs?queue={0}">{0}</a></th>'
    assert all(linked.format(name) in html for name in rows)  # each links to its jobs


def test_job_page_draws_a_crashed_then_succeeded_attempt_as_two_bars(
    project: WebProject, client: TestClient
) -> None:
    job_id = project.jobs.crashes_first.dispatch().id
    run_attempt(project.app, job_id, "crashed", "worker worker-t1 stopped heartbeating")
    run_attempt(project.app, job_id, "succeeded")
    html = client.get(f"/jobs/{job_id}").text
    bars = re.findall(r'<rect class="bar outcome-(\w+)"', html)
    assert bars == ["crashed", "succeeded"]
    assert "worker-t1 (pid 4242 on host-a)" in html
    assert "why it ran 2 times: attempt 1 crashed" in html
    assert "Traceback of attempt 1" in html
    data = client.get(f"/api/jobs/{job_id}").json()
    assert [a["outcome"] for a in data["attempts"]] == ["crashed", "succeeded"]
    assert data["state"] == "succeeded" and "payload" not in data


def test_an_encrypted_payload_is_never_shown(
    project: WebProject, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cryptography")
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("TENURE_ENCRYPTION_KEY", key)
    card = "4111-1111-1111-1111"
    job_id = project.jobs.charge.dispatch(card).id
    html = client.get(f"/jobs/{job_id}").text
    # The dashes matter: a random hex job id can hold "4111", never "4111-1111".
    assert "4111-1111" not in html and "Encrypted" in html
    data = client.get(f"/api/jobs/{job_id}").json()
    assert data["encrypted"] is True and "4111-1111" not in str(data)
    plain = project.jobs.tick.dispatch(12345).id
    assert "12345" in client.get(f"/jobs/{plain}").text


def test_a_result_is_shown_as_its_stored_text(project: WebProject, client: TestClient) -> None:
    from tenure.testing import drain

    job_id = project.jobs.totals.dispatch(7).id
    drain(project.jobs.app)
    html = client.get(f"/jobs/{job_id}").text
    assert "Result" in html and "&lt;b&gt;not markup&lt;/b&gt;" in html
    data = client.get(f"/api/jobs/{job_id}").json()
    assert data["result"] == '{"n":7,"html":"<b>not markup</b>"}'


def test_batch_page_shows_progress_against_the_declared_total_and_callbacks(
    project: WebProject, client: TestClient
) -> None:
    jobs = project.jobs
    b = project.app.batch(
        [jobs.tick.sig(i) for i in range(4)], name="rows", total=4, then=jobs.done.sig("then")
    )
    for _ in range(2):
        [r] = project.app.store.reserve(queues=["default"], worker=WORKER, lease=30)
        project.app.store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    html = client.get(f"/batches/{b.id}").text
    assert 'max="4" value="2.0"' in html and "50.0%" in html
    # its members, each linked with its state: two succeeded, two queued
    members = project.app.list_jobs(batch_id=b.id)
    assert len(members) == 4
    assert all(f'<a href="/jobs/{m.id}">' in html for m in members)
    assert html.count('<span class="badge state-succeeded">') == 2
    assert html.count('<span class="badge state-queued">') == 2
    assert 'data-live="on"' in html
    for _ in range(2):
        [r] = project.app.store.reserve(queues=["default"], worker=WORKER, lease=30)
        project.app.store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    data = client.get(f"/api/batches/{b.id}").json()
    assert (data["state"], data["progress"], data["done"]) == ("succeeded", 1.0, 4)
    assert [c["kind"] for c in data["callbacks"]] == ["then"]
    html = client.get(f"/batches/{b.id}").text
    assert "100.0%" in html and 'data-live="off"' in html and "then" in html


def test_retry_asks_for_confirmation_then_puts_the_job_back(
    project: WebProject, client: TestClient
) -> None:
    job_id = failed_job(project)
    token = csrf_of(client)
    page = client.post(f"/jobs/{job_id}/retry", data={"csrf": token, "confirmed": "0"})
    assert page.status_code == 200 and f"Retry job {job_id}?" in page.text
    assert project.app.get_job(job_id).state == "failed"
    done = client.post(
        f"/jobs/{job_id}/retry", data={"csrf": token, "confirmed": "1"}, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"].endswith("notice=retried")
    assert project.app.get_job(job_id).state == "queued"
    assert "back in its queue" in client.get(done.headers["location"]).text


def test_retry_all_and_forget(project: WebProject, client: TestClient) -> None:
    ids = [failed_job(project, n) for n in range(3)]
    token = csrf_of(client)
    assert (
        "Retry all 3 failed job(s)?" in client.post("/failed/retry-all", data={"csrf": token}).text
    )
    page = client.post("/failed/retry-all", data={"csrf": token, "confirmed": "1"})
    assert "3 failed job(s) are back" in page.text
    assert {project.app.get_job(i).state for i in ids} == {"queued"}
    gone = failed_job(project, 9, queue="other")
    client.post(f"/jobs/{gone}/forget", data={"csrf": token, "confirmed": "1"})
    assert client.get(f"/api/jobs/{gone}").status_code == 404
    kept = client.post(f"/jobs/{ids[0]}/forget", data={"csrf": token, "confirmed": "1"})
    assert "Nothing deleted: the job is not finished." in kept.text
    assert project.app.get_job(ids[0]).state == "queued"


def test_doctor_page_shows_findings_or_says_to_run_the_doctor(
    project: WebProject, client: TestClient
) -> None:
    project.jobs.tick.dispatch(1)
    data = client.get("/api/doctor").json()
    assert data["message"] is None, data["message"]
    assert "file(s) read" in data["summary"]
    html = client.get("/doctor").text
    assert data["summary"] in html
    for f in data["findings"]:
        assert f["rule"] in html
    bare = TestClient(create_app(project.app), base_url="http://127.0.0.1", client=("::1", 1))
    assert "started without --app; run `tenure doctor" in bare.get("/doctor").text


def test_openapi_describes_every_api_route(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    routes = client.app.routes  # type: ignore[attr-defined]
    api = {r.path for r in routes if isinstance(r, Route) and r.path.startswith("/api/")}
    assert api - {"/api/openapi.json"} == set(spec["paths"])
    for path, item in spec["paths"].items():
        route = next(r for r in routes if isinstance(r, Route) and r.path == path)
        assert {m.lower() for m in route.methods or ()} - {"head"} == set(item), path


def test_a_member_of_a_settled_batch_is_not_retried_and_the_page_says_why(
    project: WebProject, client: TestClient
) -> None:
    batch = project.app.batch([project.jobs.always_fails.sig(1)], name="exports")
    [r] = project.app.store.reserve(queues=["default"], worker=WORKER, lease=30)
    project.app.store.end_attempt(
        Ending(job_id=r.job_id, token=r.token, outcome="failed", error="boom")
    )
    assert project.app.get_batch(batch.id).state == "failed"
    token = csrf_of(client)

    page = client.post(f"/jobs/{r.job_id}/retry", data={"csrf": token, "confirmed": "1"})
    assert "its batch has already failed, been cancelled or finished" in page.text
    api = client.post(f"/api/jobs/{r.job_id}/retry", json={})
    assert api.status_code == 409 and api.json()["retried"] is False
    assert f"member of batch {batch.id}" in api.json()["reason"]
    assert project.app.get_job(r.job_id).state == "failed"


def test_job_page_explains_a_gap_in_its_attempt_numbers(
    project: WebProject, client: TestClient
) -> None:
    """A rolling deploy's repeated hand-backs leave no row (Store.end_attempt's `record`):
    the page says what the missing numbers were, as `tenure jobs show` does."""
    store = project.app.store

    def due() -> Any:
        return wait_until(
            lambda: store.reserve(queues=["default"], worker=WORKER, lease=30),
            what="the handed-back job to be due again",
        )[0]

    job_id = project.jobs.crashes_first.dispatch().id
    for record in (True, False):
        r = due()
        store.end_attempt(
            Ending(
                job_id=job_id,
                token=r.token,
                outcome="deferred",
                error=f"worker {WORKER.id} does not know job 'crashes_first'",
                cause=causes.UNKNOWN_JOB,
                snooze=0.05,
                record=record,
            )
        )
    assert store.end_attempt(Ending(job_id=job_id, token=due().token))[0].accepted
    html = client.get(f"/jobs/{job_id}").text
    assert (
        f"attempt 2: handed back again by worker {WORKER.id}, whose code does not know this job"
        in html
    )
    assert re.findall(r'<rect class="bar outcome-(\w+)"', html) == ["deferred", "succeeded"]


def test_job_page_draws_its_chain_with_each_links_state(
    project: WebProject, client: TestClient
) -> None:
    jobs = project.jobs
    chain = project.app.chain(
        [jobs.tick.sig(1), jobs.tick.sig(2), jobs.tick.sig(3)], finally_=jobs.done.sig("end")
    )
    first, second, third = (h.id for h in chain.links)
    run_attempt(project.app, first, "succeeded")
    html = client.get(f"/jobs/{second}").text
    stops = re.findall(r'<li class="chain-stop chain-(\w+)( current)?" data-state="([\w ]+)"', html)
    assert stops == [
        ("link", "", "succeeded"),
        ("link", " current", "queued"),
        ("link", "", "waiting"),
        ("finally", "", "not queued"),
    ]
    assert f'href="/jobs/{first}"' in html and f'href="/jobs/{third}"' not in html
    assert f"chain {chain.id}: link 2 of 3" in html
    waiting = client.get(f"/jobs/{third}")  # not dispatched yet: no row, but its chain
    assert waiting.status_code == 404
    assert "has not been dispatched yet" in waiting.text and "link 3 of 3" in waiting.text
    data = client.get(f"/api/jobs/{second}").json()
    assert [(s["position"], s["state"]) for s in data["chain"]] == [
        (1, "succeeded"),
        (2, "queued"),
        (3, "waiting"),
        (None, "not queued"),
    ]


def test_the_job_page_and_its_json_name_an_attempts_cause(
    project: WebProject, client: TestClient
) -> None:
    job_id: str = project.jobs.always_fails.dispatch(9).id
    [r] = project.app.store.reserve(queues=["default"], worker=WORKER, lease=30)
    project.app.store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="crashed",
            error="child process (pid 7) was killed by signal 9 (SIGKILL)",
            cause=causes.OOM_KILL,
        )
    )
    page = client.get(f"/jobs/{job_id}").text
    assert (
        'data-cause="oom_kill"' in page and "Cause: killed by the kernel&#39;s OOM killer" in page
    )
    (first,) = client.get(f"/api/jobs/{job_id}").json()["attempts"]
    assert (first["cause"], first["cause_words"]) == (
        "oom_kill",
        "killed by the kernel's OOM killer",
    )


def test_overview_leaves_out_a_worker_silent_for_over_an_hour(
    project: WebProject, client: TestClient
) -> None:
    """A worker killed with -9 never writes its stop: after an hour of silence it leaves the
    overview (and `tenure workers` without --all) instead of staying there for ever."""
    import sqlite3

    from tenure.core.records import WorkerRecord
    from tenure.stores.sqlite import sqlite_path

    for worker_id in ("w-fresh1", "w-killed"):
        record = WorkerRecord(worker_id, "h", 1, ("default",), 1, 0.0, 0.0)
        project.app.store.heartbeat(worker=record)
    with sqlite3.connect(sqlite_path(project.app.url)) as db:  # its last beat, 2 hours ago
        db.execute(
            "UPDATE tenure_workers SET last_seen_at = last_seen_at - 7200 WHERE id = 'w-killed'"
        )
    assert [w["id"] for w in client.get("/api/overview").json()["workers"]] == ["w-fresh1"]


def test_the_json_api_has_the_page_actions(project: WebProject, client: TestClient) -> None:
    """Cancel a job, pause, resume and purge a queue: what the HTML pages do, over JSON."""
    queued = project.jobs.tick.options(queue="mail").dispatch(1).id
    other = project.jobs.tick.options(queue="mail").dispatch(2).id
    cancelled = client.post(f"/api/jobs/{queued}/cancel", json={})
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    again = client.post(f"/api/jobs/{queued}/cancel", json={})
    assert again.status_code == 409 and "cancelled already" in again.json()["reason"]
    assert client.post("/api/jobs/nosuchjob/cancel", json={}).status_code == 404
    assert client.post("/api/queues/mail/pause", json={}).json() == {
        "queue": "mail",
        "paused": True,
    }
    rows = {r["name"]: r for r in client.get("/api/overview").json()["queues"]}
    assert rows["mail"]["paused"] is True
    assert client.post("/api/queues/mail/resume", json={}).json()["paused"] is False
    purged = client.post("/api/queues/mail/purge", json={}).json()
    assert purged == {"queue": "mail", "purged": True, "cancelled": 1}
    assert project.app.get_job(other).state == "cancelled"
    assert client.post("/api/queues/mail/explode", json={}).status_code == 404
    assert client.post("/api/queues/mail/pause").status_code == 415  # not JSON: refused


def test_overview_counts_the_waiting_jobs_no_live_worker_knows(
    project: WebProject, client: TestClient
) -> None:
    """Rolling deploys: the same number `tenure queues` prints (App.unknown_waiting), read only
    for queues with jobs waiting and live workers that reported the names they know."""
    from tenure.core.records import WorkerRecord

    project.jobs.tick.dispatch(1)
    project.jobs.always_fails.dispatch(2)
    assert "no live worker can run" not in client.get("/").text  # no worker: not judged
    old = WorkerRecord("w-old", "h", 1, ("default",), 1, 0.0, 0.0, known=("tick",))
    project.app.store.heartbeat(worker=old)
    data = client.get("/api/overview").json()
    assert data["unknown_jobs"] == 1
    assert data["unknown"] == [
        {"queue": "default", "count": 1, "names": ["always_fails"], "capped": False}
    ]
    html = client.get("/").text
    assert "<strong>1 job no live worker can run</strong>" in html and "always_fails" in html
    new = WorkerRecord("w-new", "h", 2, ("default",), 1, 0.0, 0.0, known=("always_fails",))
    project.app.store.heartbeat(worker=new)
    assert client.get("/api/overview").json()["unknown_jobs"] == 0
    assert "no live worker can run" not in client.get("/").text

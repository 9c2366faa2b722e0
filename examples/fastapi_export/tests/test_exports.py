"""Issue 11's acceptance, through HTTP: a request enqueues in its own transaction, a rollback
leaves no job, the batch finishes, its progress reaches 100% (never going backwards)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from exportapp import db
from exportapp.jobs import export_rows, finish_export, start_export
from exportapp.web import create_export
from fastapi.testclient import TestClient

import tenure
from tenure.testing import assert_dispatched, assert_not_dispatched, drain

from conftest import CUSTOMERS

EXAMPLE = Path(__file__).resolve().parents[1]
WORKER_OPTIONS = ["--burst", "--concurrency", "4", "--lease", "10"]


def test_the_request_returns_at_once_with_the_job_enqueued(client: TestClient) -> None:
    r = client.post("/exports", json={"account_id": 1, "lo": 1, "hi": CUSTOMERS})
    assert r.status_code == 202, r.text
    export_id = r.json()["id"]
    assert_dispatched(start_export, args=(export_id,), count=1)
    assert_not_dispatched(export_rows)  # nothing ran in the request: a worker plans the batch
    shown = client.get(r.json()["progress_url"]).json()
    assert (shown["status"], shown["progress"]) == ("queued", 0.0)


def test_the_job_is_visible_only_after_the_commit(database_url: str) -> None:
    with db.connect(database_url) as conn:
        export_id = create_export(conn, 1, 1, 100)
        assert_not_dispatched(start_export)  # tenure's own connection cannot see it yet
        conn.commit()
    assert_dispatched(start_export, args=(export_id,))


def test_a_rolled_back_request_leaves_no_job(client: TestClient, tenure_app: tenure.App) -> None:
    # account 1 has 3 credits: the 4th request fails at its last step, after the enqueue
    ids = [
        client.post("/exports", json={"account_id": 1, "lo": 1, "hi": 10}).json()["id"]
        for _ in range(3)
    ]
    r = client.post("/exports", json={"account_id": 1, "lo": 1, "hi": 10})
    assert r.status_code == 402, r.text
    assert_dispatched(start_export, count=3)
    assert sum(tenure_app.counts().values()) == 3  # three jobs, no fourth
    with db.connect(tenure_app.url) as conn:
        assert sorted(row[0] for row in conn.all("SELECT id FROM exports")) == sorted(ids)


def test_the_batch_finishes_and_progress_reaches_100_percent(
    client: TestClient, tenure_app: tenure.App
) -> None:
    """`tenure.testing.drain` runs the jobs here, through the store, a few at a time."""
    export_id = client.post("/exports", json={"account_id": 1, "lo": 1, "hi": CUSTOMERS}).json()[
        "id"
    ]
    seen: list[float] = []
    while ran := drain(tenure_app, max_jobs=3):
        assert all(job.state == "succeeded" for job in ran), [(j.name, j.state) for j in ran]
        seen.append(client.get(f"/exports/{export_id}").json()["progress"])
    assert seen == sorted(seen), f"progress went backwards: {seen}"
    assert 0 < seen[0] < 1  # the bar moved in steps
    shown = client.get(f"/exports/{export_id}").json()
    assert shown["status"] == "done" and shown["batch_state"] == "succeeded"
    assert shown["progress"] == 1.0 and shown["done"] == shown["total"] == 12  # 10 + 2 planners
    assert_dispatched(finish_export, args=(export_id,), count=1)
    csv = client.get(shown["download_url"]).text.splitlines()
    assert csv[0] == "id,name,email" and len(csv) == 1 + CUSTOMERS
    assert csv[-1] == f"{CUSTOMERS},Customer {CUSTOMERS},customer{CUSTOMERS}@example.com"


def test_a_real_worker_finishes_the_export(client: TestClient, database_url: str) -> None:
    """`tenure worker --burst` in its own process, on the same database, until the queues
    are empty; the request returned long before."""
    export_id = client.post("/exports", json={"account_id": 1, "lo": 1, "hi": CUSTOMERS}).json()[
        "id"
    ]
    worker = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "exportapp.jobs:app", *WORKER_OPTIONS],
        cwd=EXAMPLE,
        env={**os.environ, "EXPORTS_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr[-3000:]
    shown = client.get(f"/exports/{export_id}").json()
    assert (shown["status"], shown["progress"], shown["rows"]) == ("done", 1.0, CUSTOMERS)

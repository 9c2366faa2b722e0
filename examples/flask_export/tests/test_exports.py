"""Issue 11's acceptance, through Flask: the request creates the batch in its own transaction,
a rollback leaves no batch and no job, the batch runs to 100% with its progress shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flask.testing import FlaskClient
from flaskexport import db
from flaskexport.jobs import export_rows, finish_export
from flaskexport.web import create_export

import tenure
from tenure.coordinator import COORDINATOR
from tenure.testing import assert_dispatched, assert_not_dispatched, drain

from conftest import CUSTOMERS

EXAMPLE = Path(__file__).resolve().parents[1]


def start(client: FlaskClient, lo: int = 1, hi: int = CUSTOMERS) -> str:
    r = client.post("/exports", json={"lo": lo, "hi": hi})
    assert r.status_code == 202, r.text
    export_id: str = r.get_json()["id"]
    return export_id


def test_the_request_creates_the_batch_and_returns_at_once(
    client: FlaskClient, tenure_app: tenure.App
) -> None:
    export_id = start(client)
    assert_dispatched(tenure_app.get_definition(COORDINATOR), count=1)  # the first planner
    assert_not_dispatched(export_rows)  # nothing ran in the request: a worker plans the rest
    shown = client.get(f"/exports/{export_id}").get_json()
    assert shown == {"status": "running", "progress": 0.0, "done": 0, "total": 12}


def test_a_rolled_back_request_leaves_no_batch_and_no_job(
    client: FlaskClient, tenure_app: tenure.App
) -> None:
    for _ in range(3):  # account 1 has 3 credits
        start(client, 1, 10)
    r = client.post("/exports", json={"lo": 1, "hi": 10})  # fails after creating its batch
    assert r.status_code == 402, r.text
    assert len(tenure_app.store.list_batches()) == 3  # no fourth
    assert sum(tenure_app.counts().values()) == 3  # three first coordinators, nothing else


def test_the_batch_is_visible_only_after_the_commit(
    database_url: str, tenure_app: tenure.App
) -> None:
    conn = db.Db(database_url)
    try:
        create_export(conn, 1, 100)
        # tenure's own connection sees nothing yet: no batch, no job
        assert tenure_app.store.list_batches() == [] and sum(tenure_app.counts().values()) == 0
        conn.raw.commit()
    finally:
        conn.raw.close()
    (batch,) = tenure_app.store.list_batches()
    assert (batch.state, batch.total, sum(tenure_app.counts().values())) == ("running", 3, 1)


def test_the_batch_runs_to_100_percent_with_its_progress_shown(
    client: FlaskClient, tenure_app: tenure.App
) -> None:
    export_id = start(client)
    seen: list[float] = []
    while ran := drain(tenure_app, max_jobs=3):  # a few jobs at a time, here, via the store
        assert all(job.state == "succeeded" for job in ran), [(j.name, j.state) for j in ran]
        seen.append(client.get(f"/exports/{export_id}").get_json()["progress"])
    assert seen == sorted(seen) and 0 < seen[0] < 1, f"progress: {seen}"
    shown = client.get(f"/exports/{export_id}").get_json()
    assert shown == {"status": "done", "progress": 1.0, "done": 12, "total": 12}
    assert_dispatched(finish_export, args=(export_id,), count=1)
    csv = client.get(f"/exports/{export_id}.csv").text.splitlines()
    assert csv[0] == "id,name" and len(csv) == 1 + CUSTOMERS
    assert csv[-1] == f"{CUSTOMERS},Customer {CUSTOMERS}"


def test_a_real_worker_finishes_the_export(client: FlaskClient, database_url: str) -> None:
    export_id = start(client)
    worker = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "flaskexport.jobs:app", "--burst"],
        cwd=EXAMPLE,
        env={**os.environ, "EXPORTS_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr[-3000:]
    shown = client.get(f"/exports/{export_id}").get_json()
    assert (shown["status"], shown["progress"]) == ("done", 1.0)

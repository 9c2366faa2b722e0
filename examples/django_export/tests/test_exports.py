"""Issue 11's acceptance, through Django's views: a request enqueues in its own transaction, a
rollback leaves no job, the batch finishes, its progress reaches 100%."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import transaction
from django.test import Client
from exports.jobs import export_rows, finish_export, start_export
from exports.models import Account, Export
from exports.views import NoCredits, create_export

import tenure
from tenure.testing import assert_dispatched, assert_not_dispatched, drain

from conftest import CUSTOMERS

EXAMPLE = Path(__file__).resolve().parents[1]
WORKER_OPTIONS = ["--burst", "--concurrency", "4", "--lease", "10"]


def post_export(client: Client, lo: int = 1, hi: int = CUSTOMERS) -> str:
    r = client.post(
        "/exports/", {"account_id": 1, "lo": lo, "hi": hi}, content_type="application/json"
    )
    assert r.status_code == 202, r.content
    return str(r.json()["id"])


def test_the_request_returns_at_once_with_the_job_enqueued(client: Client) -> None:
    export_id = post_export(client)
    assert_dispatched(start_export, args=(export_id,), count=1)
    assert_not_dispatched(export_rows)  # nothing ran in the request: a worker plans the batch
    shown = client.get(f"/exports/{export_id}/").json()
    assert (shown["status"], shown["progress"]) == ("queued", 0.0)


def test_the_job_is_visible_only_after_the_commit(database_url: str) -> None:
    with transaction.atomic():
        export = create_export(1, 1, 100)
        assert_not_dispatched(start_export)  # tenure's own connection cannot see it yet
    assert_dispatched(start_export, args=(export.id,))


def test_a_rollback_leaves_no_job(database_url: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        create_export(1, 1, 100)
        raise RuntimeError("the request failed after the enqueue")
    assert_not_dispatched(start_export)
    assert not Export.objects.exists()


def test_a_request_that_fails_after_the_enqueue_leaves_no_job(
    client: Client, tenure_app: tenure.App
) -> None:
    ids = [post_export(client, 1, 10) for _ in range(3)]  # account 1 has 3 credits
    r = client.post(
        "/exports/", {"account_id": 1, "lo": 1, "hi": 10}, content_type="application/json"
    )
    assert r.status_code == 402, r.content  # charged last, after the enqueue: all rolled back
    assert_dispatched(start_export, count=3)
    assert sum(tenure_app.counts().values()) == 3
    assert sorted(Export.objects.values_list("id", flat=True)) == sorted(ids)
    assert Account.objects.get(id=1).export_credits == 0
    with pytest.raises(NoCredits), transaction.atomic():
        create_export(1, 1, 10)


def test_a_real_worker_finishes_the_export(client: Client, database_url: str) -> None:
    """`tenure worker --burst` in its own process until the queues are empty."""
    export_id = post_export(client)
    worker = subprocess.run(
        [
            sys.executable,
            "-m",
            "tenure",
            "worker",
            "--app",
            "exportsite.worker:app",
            *WORKER_OPTIONS,
        ],
        cwd=EXAMPLE,
        env={**os.environ, "EXPORTS_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr[-3000:]
    shown = client.get(f"/exports/{export_id}/").json()
    assert shown["status"] == "done" and shown["batch_state"] == "succeeded"
    assert shown["progress"] == 1.0 and shown["done"] == shown["total"] == 12
    csv = client.get(shown["download_url"]).content.decode().splitlines()
    assert csv[0] == "id,name,email" and len(csv) == 1 + CUSTOMERS


def test_drain_finishes_the_batch_in_the_test_process(
    client: Client, tenure_app: tenure.App
) -> None:
    export_id = post_export(client)
    ran = drain(tenure_app)
    assert [j.state for j in ran] == ["succeeded"] * 14  # start, 2 planners, 10 ranges, finish
    assert_dispatched(finish_export, args=(export_id,), count=1)
    shown = client.get(f"/exports/{export_id}/").json()
    assert (shown["status"], shown["progress"], shown["rows"]) == ("done", 1.0, CUSTOMERS)

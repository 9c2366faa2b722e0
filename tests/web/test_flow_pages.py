"""The dashboard on jobs held by a concurrency limit (issue 31): the overview counts them
apart, and a parked job's page says which key it waits on, the key's text shown literally."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

import tenure
from tenure.core.records import WorkerRef
from tenure.web import create_app


def test_the_dashboard_shows_jobs_waiting_on_a_key(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")

    @app.job(name="sync", concurrency=1, concurrency_key=lambda account: account)
    def sync(account: str) -> None: ...

    _, second = sync.dispatch("<b>acme</b>"), sync.dispatch("<b>acme</b>")
    app.store.reserve(queues=["default"], worker=WorkerRef("w", "h", 1), lease=30, limit=2)
    web = create_app(app)
    with TestClient(web, base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000)) as c:
        [row] = c.get("/api/overview").json()["queues"]
        assert (row["waiting"], row["on_keys"], row["running"]) == (1, 1, 1)
        assert "1 on concurrency keys" in c.get("/").text
        page = c.get(f"/jobs/{second.id}").text
    assert "waiting on concurrency key sync:&lt;b&gt;acme&lt;/b&gt;" in page
    assert "<b>acme</b>" not in page

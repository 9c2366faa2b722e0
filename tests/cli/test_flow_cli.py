"""`tenure queues --keys` and `tenure jobs show` on jobs held by a concurrency limit (issue
31), as users run them, in a process of their own, on a SQLite store."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import tenure
from cli.helpers import run_cli
from tenure.core.guards import Guards
from tenure.core.records import NewJob, WorkerRef
from tenure.core.retry import Policy


def columns_of(line: str) -> list[str]:
    """A row of tenure's tables: cells apart by two spaces or more (a key may hold one)."""
    return re.split(r"\s{2,}", line.strip())


def test_queues_keys_shows_running_and_waiting_per_key(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'ops.db'}")
    app.migrate()
    base = NewJob("x", "sync", "default", '{"args":[],"kwargs":{}}', Policy(tries=1))
    # a key as users' key functions make it, odd characters and all: printed literally
    keys = ["sync:acme [bold]", "sync:acme [bold]", "sync:acme [bold]", "sync:zed"]
    app.store.enqueue_many(
        [
            replace(base, id=f"j{i}", guards=Guards(concurrency_key=k, concurrency_limit=1))
            for i, k in enumerate(keys)
        ]
    )
    app.store.reserve(queues=["default"], worker=WorkerRef("w", "h", 1), lease=30, limit=10)
    plain = run_cli("queues", "--url", app.url, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    [row] = [line for line in plain.stdout.splitlines() if " default " in line]
    cells = columns_of(row)
    assert cells[1:4] == ["0", "0", "2"] and cells[6] == "2"  # 0 ready, 2 running, 2 waiting
    assert "concurrency key" not in plain.stdout
    shown = run_cli("queues", "--keys", "--url", app.url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {
        cells[1]: cells[2:5]
        for line in shown.stdout.splitlines()
        if "sync:" in line and (cells := columns_of(line))
    }
    # running, limit, waiting
    assert rows == {"sync:acme [bold]": ["1", "1", "2"], "sync:zed": ["1", "1", "0"]}
    job = run_cli("jobs", "show", "j1", "--url", app.url, cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    assert "queued" in job.stdout
    assert "waiting on concurrency key 'sync:acme [bold]'" in job.stdout

"""`tenure queue purge NAME` / `app.purge(queue)` (Celery purge, `rq empty`) and `tenure
workers` (Sidekiq's Busy page), on a real SQLite store and through the CLI."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from functools import partial
from pathlib import Path

import tenure
from cli import helpers
from tenure.core.records import WorkerRecord, WorkerRef

run_cli = partial(helpers.run_cli, columns=80)


def make_app(tmp_path: Path) -> tenure.App:
    app = tenure.App(f"sqlite:///{tmp_path / 'q.db'}")
    app.job(name="mail")(lambda n: n)
    return app


def test_purge_cancels_what_waits_and_leaves_the_rest(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    mail = app.jobs["mail"]
    waiting = [mail.options(queue="mail").dispatch(i).id for i in range(3)]
    later = mail.options(queue="mail", delay=3600).dispatch(9).id
    other = mail.options(queue="reports").dispatch(1).id
    last = mail.options(queue="mail").dispatch(7).id
    worker = WorkerRef(id="w-1", host="h", pid=1)
    (held,) = app.store.reserve(queues=["mail"], worker=worker, lease=30, limit=1)
    assert held.job_id == waiting[0]  # the oldest: the one now running
    assert app.waiting_in("mail") == 4
    assert app.purge("mail") == 4
    states = {i: app.get_job(i).state for i in [*waiting, later, other, last]}
    assert states == {
        waiting[0]: "running",
        waiting[1]: "cancelled",
        waiting[2]: "cancelled",
        later: "cancelled",
        other: "queued",
        last: "cancelled",
    }
    assert app.purge("mail") == 0
    app.close()


def test_queue_purge_asks_counts_and_cancels(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    ids = [app.jobs["mail"].options(queue="mail").dispatch(i).id for i in range(2)]
    url = app.url
    app.close()
    refused = run_cli("queue", "purge", "mail", "--url", url, cwd=tmp_path, stdin="")
    assert refused.returncode == 2
    assert "holds 2 waiting job(s): pass --yes" in refused.stderr
    done = run_cli("queue", "purge", "mail", "--yes", "--url", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "queue 'mail' purged: 2 job(s) cancelled" in done.stdout
    app = tenure.App(url)
    assert {app.get_job(i).state for i in ids} == {"cancelled"}
    app.close()
    empty = run_cli("queue", "purge", "mail", "--yes", "--url", url, cwd=tmp_path)
    assert "holds no waiting job; nothing cancelled" in empty.stdout
    bad = run_cli("queue", "purge", " ", "--yes", "--url", url, cwd=tmp_path)
    assert bad.returncode == 2 and "queue: expected a queue name" in bad.stderr


def test_workers_lists_live_stopped_and_silent_workers(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    app.jobs["mail"].dispatch(1)

    def register(worker_id: str, pid: int) -> WorkerRef:
        record = WorkerRecord(worker_id, "host-a", pid, ("default", "mail"), 4, 0.0, 0.0)
        if worker_id == "w-live01":  # its code defines these job names (rolling deploys)
            record = replace(record, known=("mail", "report"))
        app.store.heartbeat(worker=record)
        return WorkerRef(id=worker_id, host="host-a", pid=pid)

    live = register("w-live01", 101)
    app.store.reserve(queues=["default"], worker=live, lease=30, limit=1)
    register("w-gone01", 102)
    stopped = WorkerRecord("w-gone01", "host-a", 102, ("default",), 1, 0.0, 0.0, stopped_at=0.0)
    app.store.heartbeat(worker=stopped)
    register("w-dead001", 103)  # killed with -9: never stopped, silent for two hours
    with sqlite3.connect(tmp_path / "q.db") as db:
        back = "UPDATE tenure_workers SET last_seen_at = last_seen_at - 7200 WHERE id = ?"
        db.execute(back, ("w-dead001",))
    url = app.url
    app.close()
    shown = run_cli("workers", "--url", url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines() if "w-" in line}
    assert rows["w-live01"][:7] == [
        "w-live01",
        "live",
        "host-a",
        "101",
        "default,mail",
        "1/4",
        "2",  # the job names it knows
    ]
    assert rows["w-gone01"][1] == "stopped"
    assert rows["w-gone01"][6] == "?"  # a worker that did not report its names
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80
    assert "w-dead001" not in shown.stdout and "1 older stopped or silent" in shown.stdout
    every = run_cli("workers", "--all", "--url", url, cwd=tmp_path)
    assert "w-dead001" in every.stdout and "silent" in every.stdout
    nothing = run_cli("workers", "--url", f"sqlite:///{tmp_path / 'none.db'}", cwd=tmp_path)
    assert nothing.returncode == 2 and "no SQLite store at" in nothing.stderr


def test_queues_counts_the_waiting_jobs_no_live_worker_serving_them_knows(
    tmp_path: Path,
) -> None:
    """Rolling deploys: per queue, the waiting jobs whose name no live worker serving that
    queue reported; a queue with a worker that reported nothing (older code) is not judged."""
    app = make_app(tmp_path)
    app.job(name="report\n'new'")(lambda: None)  # stored text: printed literally (repr)
    app.job(name="legacy", queue="old")(lambda: None)
    app.jobs["mail"].dispatch(1)
    for _ in range(2):
        app.jobs["report\n'new'"].dispatch()
    app.jobs["legacy"].dispatch()
    old = WorkerRecord("w-old", "host-a", 1, ("default",), 1, 0.0, 0.0, known=("mail",))
    unreported = WorkerRecord("w-older", "host-a", 2, ("old",), 1, 0.0, 0.0)
    for record in (old, unreported):
        app.store.heartbeat(worker=record)
    url = app.url
    app.close()
    shown = run_cli("queues", "--url", url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        "queue 'default': 2 waiting job(s) no live worker knows (\"report\\n'new'\")"
        in shown.stdout
    )
    assert "queue 'old'" not in shown.stdout  # its worker did not report its names

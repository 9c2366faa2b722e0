"""`tenure workers`: every worker the store knows of, as Sidekiq's Busy page or `celery
inspect` show them: host, pid, queues, the jobs it runs now, its last heartbeat."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from tenure.cli.common import AppOption, UrlOption, err, open_app, out, say
from tenure.cli.tables import Column, print_table
from tenure.control import WORKER_GONE_AFTER_S
from tenure.core.records import WorkerRecord
from tenure.core.words import clock_text

RECENT_S = WORKER_GONE_AFTER_S  # stopped or silent workers shown by default: those of the last hour


def status(w: WorkerRecord, now: float) -> str:
    if w.stopped_at is not None:
        return "stopped"
    return "live" if w.is_live(now) else "silent"  # silent: killed, frozen or cut off


def workers(
    all_: Annotated[
        bool, typer.Option("--all", help="Also workers stopped or silent over an hour ago.")
    ] = False,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Workers: host, pid, queues, jobs running now, how many job names its code defines, last
    heartbeat, and whether each is live, stopped, or silent (no heartbeat for a minute: killed
    or cut off)."""
    the_app = open_app(app, url)
    now = the_app.now()
    known = the_app.workers()
    shown = [
        w
        for w in known
        if all_ or status(w, now) == "live" or now - (w.stopped_at or w.last_seen_at) < RECENT_S
    ]
    if not shown:
        say("no worker has registered in this store" if not known else "no recent worker")
        return
    running = Counter(j.worker_id for j in the_app.list_jobs(state="running", limit=10_000))
    columns = [Column("id"), Column("status"), Column("host", "cut", floor=8)]
    columns += [Column("pid", justify="right"), Column("queues", "fold", floor=10)]
    # how many job names its code defines: during a rolling deploy, old and new workers differ
    # (a stopped worker's heartbeat of another day is dated, 23 columns: these give way first)
    columns += [Column("running", justify="right", drop=1)]
    columns += [Column("knows", justify="right", drop=2)]
    columns += [Column("last heartbeat")]
    rows = [
        [
            w.id,
            status(w, now),
            w.host,
            str(w.pid),
            ",".join(w.queues),
            f"{running.get(w.id, 0)}/{w.concurrency}",
            "?" if w.known is None else str(len(w.known)),
            clock_text(w.stopped_at or w.last_seen_at),
        ]
        for w in sorted(shown, key=lambda w: (status(w, now) != "live", w.host, w.pid))
    ]
    print_table(out, err, columns, rows)
    hidden = len(known) - len(shown)
    if hidden:
        say(f"{hidden} older stopped or silent worker(s) not shown (--all shows them)")


def register(cli: typer.Typer) -> None:
    cli.command("workers")(workers)

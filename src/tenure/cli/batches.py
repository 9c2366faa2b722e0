"""`tenure batch ...`: follow, show, list and cancel batches."""

from __future__ import annotations

from typing import Annotated

import typer

from tenure.cli.common import AppOption, UrlOption, err, fail, open_app, out, say, say_wrapped
from tenure.cli.jobs import ID, JOB, QUEUE
from tenure.cli.tables import Column, print_table, short
from tenure.core.errors import JobNotFound

batch_cli = typer.Typer(help="Batches: watch, show, list, cancel.", no_args_is_help=True)


@batch_cli.command("watch")
def batch_watch(batch_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Follow a batch with a live progress bar; closing it does not stop the work."""
    from tenure.cli.watch import summary, watch_batch

    the_app = open_app(app, url)
    try:
        info = watch_batch(the_app, batch_id, out)
    except JobNotFound as exc:
        fail(str(exc), code=1)
        return
    except KeyboardInterrupt:
        say(f"stopped watching; the batch goes on (tenure batch watch {batch_id})")
        return
    say_wrapped(summary(info))


@batch_cli.command("show")
def batch_show(
    batch_id: str,
    members: Annotated[
        bool, typer.Option("--members", help="List its member jobs, newest first.")
    ] = False,
    state: Annotated[
        str | None, typer.Option(help="With --members: only those in this state.")
    ] = None,
    limit: Annotated[int, typer.Option(help="With --members: at most this many.")] = 50,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Where a batch stands, and its callback jobs; --members lists its jobs."""
    from tenure.cli.watch import summary

    the_app = open_app(app, url)
    try:
        info = the_app.get_batch(batch_id)
    except JobNotFound as exc:
        fail(str(exc), code=1)
        return
    say_wrapped(summary(info) + f"; progress {info.progress:.1%}")
    if not members:
        return
    found = the_app.list_jobs(batch_id=batch_id, state=state, limit=limit)
    columns = [ID, JOB, QUEUE, Column("state"), Column("tries", drop=3)]
    columns += [Column("last error", "fold", floor=12)]
    rows = [
        [j.id, j.name, j.queue, j.state, str(j.tries_used), short(j.last_error or "", 60)]
        for j in found
    ]
    print_table(out, err, columns, rows)
    more = " (--limit for more)" if len(found) >= limit else ""
    say(f"{len(found)} member(s) shown{more}")


@batch_cli.command("list")
def batch_list(
    limit: Annotated[int, typer.Option()] = 20, app: AppOption = None, url: UrlOption = None
) -> None:
    """Recent batches, newest first."""
    columns = [ID, Column("name", "cut", floor=10), Column("state"), Column("progress")]
    columns += [Column(h, justify="right") for h in ("done", "failed", "total")]
    rows = [
        [b.id, b.name, b.state, f"{b.progress:.1%}", str(b.done), str(b.failed), str(b.total)]
        for b in open_app(app, url).list_batches(limit=limit)
    ]
    print_table(out, err, columns, rows)


@batch_cli.command("cancel")
def batch_cancel(batch_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Cancel a batch: its queued jobs never start; running ones see `batch.cancelled`."""
    the_app = open_app(app, url)
    if not the_app.cancel_batch(batch_id):
        try:
            state = the_app.get_batch(batch_id).state
        except JobNotFound as exc:
            fail(str(exc), code=1)
            return
        fail(f"batch {batch_id} is {state}, not running; nothing cancelled", code=1)
    say(f"cancelled batch {batch_id}")

"""`tenure queues` (how long each queue's jobs wait) and `tenure queue pause|resume|purge NAME`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.text import Text

from tenure.app import App
from tenure.cli.common import AppOption, UrlOption, err, fail, open_app, out, say, unknown_queue
from tenure.cli.tables import Column, print_table
from tenure.control import QueueWait
from tenure.rolling import unknown_text

queue_cli = typer.Typer(
    help="Pause, resume or purge a queue: workers on every host stop or start reserving "
    "from it, or what waits in it is cancelled.",
    no_args_is_help=True,
)


def age_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def queues(
    max_wait: Annotated[
        float | None,
        typer.Option(
            "--max-wait",
            min=0,
            help="Exit 1 when a queue's oldest ready job has waited longer than this many "
            "seconds (for a cron probe or a liveness check).",
        ),
    ] = None,
    keys: Annotated[
        bool,
        typer.Option(
            "--keys", help="Also each concurrency key in use: its jobs running and waiting."
        ),
    ] = False,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Per queue: jobs ready, scheduled and running, whether it is paused, how long its
    oldest ready job has waited (on the store's clock), and jobs waiting on a concurrency
    key."""
    the_app = open_app(app, url)
    waits = the_app.queue_waits(keys=keys)
    if not waits:
        say("no queue holds a job (and none is paused)")
        return
    columns = [Column("queue", "cut", floor=12)]
    columns += [
        Column(h, justify="right")
        for h in ("ready", "scheduled", "running", "paused", "oldest ready", "waiting")
    ]
    rows = [
        [
            w.queue,
            str(w.ready),
            str(w.scheduled),
            str(w.running),
            *paused_and_age(w),
            str(w.waiting),
        ]
        for w in waits
    ]
    print_table(out, err, columns, rows)
    print_unknown(the_app, [w.queue for w in waits if w.ready or w.scheduled or w.waiting])
    if keys:
        print_keys(waits)
    if max_wait is not None:
        over = [w for w in waits if w.over(max_wait)]
        if over:
            fail(f"waited longer than --max-wait {max_wait:g} s: {late(over)}", code=1)


def paused_and_age(w: QueueWait) -> list[str]:
    return ["paused" if w.paused else "no", age_text(w.oldest_ready_age)]


def print_unknown(the_app: App, queues: list[str]) -> None:
    """Rolling deploys: a line per queue holding jobs that no live worker serving it knows."""
    if not queues:
        return
    for u in the_app.unknown_waiting(queues):
        out.print(Text(unknown_text(u)), soft_wrap=True)


def print_keys(waits: list[QueueWait]) -> None:
    """One line per concurrency key in use: running against its limit, and waiting."""
    rows = [
        [w.queue, key, str(c.running), str(c.limit), str(c.waiting)]
        for w in waits
        for key, c in sorted((w.by_key or {}).items())
    ]
    if not rows:
        say("no concurrency key has a job running or waiting")
        return
    columns = [Column("queue", "cut", floor=12), Column("concurrency key", "cut", floor=16)]
    columns += [Column(h, justify="right") for h in ("running", "limit", "waiting")]
    print_table(out, err, columns, rows)  # stored text, printed literally


def late(over: list[QueueWait]) -> str:
    return ", ".join(
        f"{w.queue!r} {age_text(w.oldest_ready_age)}" + (" (paused)" if w.paused else "")
        for w in over
    )


@queue_cli.command("pause")
def queue_pause(name: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Stop every worker, on every host, from reserving jobs of queue NAME (within a second).
    Running jobs go on, dispatching still works, and the pause survives restarts."""
    the_app = open_app(app, url, create=True)
    known = {w.queue: w for w in the_app.queue_waits()}
    the_app.pause_queue(name)
    say(f"queue {name!r} paused: no worker takes its jobs until `tenure queue resume {name}`")
    if name not in known:
        err.print(
            Text(f"note: queue {name!r} holds no job yet; it stays paused when jobs arrive"),
            soft_wrap=True,
        )


@queue_cli.command("resume")
def queue_resume(name: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Let workers reserve jobs of queue NAME again."""
    the_app = open_app(app, url)
    was = {w.queue: w for w in the_app.queue_waits()}.get(name)
    the_app.resume_queue(name)
    if was is None or not was.paused:
        say(f"queue {name!r} was not paused; nothing changed")
        return
    say(f"queue {name!r} resumed: {was.ready} ready job(s) go to the workers")


@queue_cli.command("purge")
def queue_purge(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Cancel every job waiting in queue NAME (queued or scheduled): they never run. Running
    jobs go on; dispatching goes on. Asks first unless --yes."""
    the_app = open_app(app, url)
    waiting = the_app.waiting_in(name)
    if waiting == 0:
        unknown = unknown_queue(the_app, name)
        say(
            f"{unknown}; nothing cancelled"
            if unknown
            else f"queue {name!r} holds no waiting job; nothing cancelled"
        )
        return
    if not yes:
        if not sys.stdin.isatty():
            fail(f"queue {name!r} holds {waiting} waiting job(s): pass --yes to cancel them")
        typer.confirm(f"cancel the {waiting} waiting job(s) of queue {name!r}?", abort=True)
    cancelled = the_app.purge(name)
    say(f"queue {name!r} purged: {cancelled} job(s) cancelled; running jobs go on")


def register(cli: typer.Typer) -> None:
    cli.command("queues")(queues)
    cli.add_typer(queue_cli, name="queue")

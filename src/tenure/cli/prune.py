"""`tenure prune [--dry-run]`: delete now what retention says is due (workers do it on their
own, a chunk per tick); with --dry-run, say what would go and delete nothing."""

from __future__ import annotations

from typing import Annotated

import typer

from tenure.cli.common import AppOption, UrlOption, open_app, say


def register(cli: typer.Typer) -> None:
    cli.command("prune")(prune)


def prune(
    app: AppOption = None,
    url: UrlOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be deleted; delete nothing.")
    ] = False,
) -> None:
    """Delete finished jobs (with their attempts and effects), settled batches (with their
    members) and expired guard rows past their retention: keep_succeeded= (default 1 day) and
    keep_failed= (14 days), on the store's clock. Live jobs, members of running batches and
    each periodic job's latest run are kept."""
    the_app = open_app(app, url)
    pruned = the_app.prune(dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    for kind, n in pruned.kinds().items():
        say(f"{verb} {n} {kind}")

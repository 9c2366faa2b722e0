"""The `tenure` command: thin; it parses, calls the library, and prints.

It starts with the base install alone: commands whose extra is missing (the dashboard, the
doctor, a PostgreSQL or Redis store) load anyway and name the `pip install` that brings it.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from tenure.cli import operate, prune, queues, workers
from tenure.cli.batches import batch_cli
from tenure.cli.common import say, store_options_pass_down, wrap_commands
from tenure.cli.jobs import failed_cli, jobs_cli
from tenure.cli.periodic import periodic_cli
from tenure.doctor.command import register as register_doctor
from tenure.web.command import register as register_dashboard

# Help text is printed as written: markup mode would eat "[web]" in "pip install 'tenure[web]'".
cli = typer.Typer(
    name="tenure",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
for group in (jobs_cli, failed_cli, batch_cli, periodic_cli):
    store_options_pass_down(group)
cli.add_typer(jobs_cli, name="jobs")
cli.add_typer(failed_cli, name="failed")
cli.add_typer(batch_cli, name="batch")
cli.add_typer(periodic_cli, name="periodic")
operate.register(cli)
prune.register(cli)
queues.register(cli)
workers.register(cli)
register_dashboard(cli)
register_doctor(cli)


def installed_version() -> str:
    # imported here: only --version needs it, and every `tenure worker` would pay its import
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tenure")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from tenure import __version__

        return __version__


def show_version(value: bool) -> None:
    if value:
        say(f"tenure {installed_version()}")
        raise typer.Exit()


@cli.callback()
def root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Background jobs that never run twice by accident.

    Every command reads the store named by --url URL, else $TENURE_URL (set it once to point
    every command at one store), else the URL of the App that --app MODULE:ATTR names, else
    ./tenure.db; it says on stderr which one won.
    """


wrap_commands(cli)


def main() -> None:
    cli()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

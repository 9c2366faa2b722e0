"""Runs `tenure dashboard` from tenure.web.command on a Typer app of its own, so the tests drive
the real command before (and independently of) its wiring into tenure's main CLI."""

import typer

from tenure.web.command import register

cli = typer.Typer(add_completion=False)


@cli.callback()
def main() -> None:
    """A group, so that `dashboard` is a subcommand as in `tenure dashboard`."""


register(cli)

if __name__ == "__main__":
    cli()

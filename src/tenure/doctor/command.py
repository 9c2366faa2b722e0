"""`tenure doctor`: registered on the main CLI by cli.py, testable on any Typer app."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from tenure.extras import missing_extra

EXIT_CLEAN, EXIT_FINDINGS, EXIT_CANNOT_RUN = 0, 1, 2


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"


def register(cli: typer.Typer) -> None:
    @cli.command("doctor")
    def doctor(
        path: Annotated[
            str, typer.Argument(help="Project directory with deployment files and job code.")
        ] = ".",
        app: Annotated[
            str | None,
            typer.Option("--app", help="MODULE:ATTR of your tenure.App (imported from here)."),
        ] = None,
        output_format: Annotated[
            Format, typer.Option("--format", help="text, json or sarif.")
        ] = Format.text,
        strict: Annotated[bool, typer.Option(help="Exit 1 on warnings too.")] = False,
        history: Annotated[
            bool, typer.Option(help="Read the store's history (slow jobs, crash loops).")
        ] = True,
        laravel: Annotated[
            str | None,
            typer.Option(
                "--laravel", help="Laravel project to audit (found under PATH by itself)."
            ),
        ] = None,
        celery: Annotated[
            str | None,
            typer.Option(
                "--celery",
                help="Celery app to audit: MODULE:ATTR or a settings .py PATH (found under PATH "
                "by itself when omitted).",
            ),
        ] = None,
        rules: Annotated[
            bool, typer.Option("--rules", help="List every rule (id, severity, why) and exit.")
        ] = False,
    ) -> None:
        """Check the four clocks: job code, worker options, deployment files and history.

        Exit 0 when clean, 1 with error findings (warnings too with --strict), 2 when the
        doctor could not run. Needs the 'doctor' extra: pip install 'tenure[doctor]'.
        """
        if rules:
            list_rules(output_format)
            return
        try:
            from tenure.doctor.engine import CannotRun, diagnose
            from tenure.doctor.output import dumps, to_json, to_sarif, write_text
        except ImportError as exc:
            typer.echo(f"error: {missing_extra('tenure doctor', 'doctor', exc)}", err=True)
            raise typer.Exit(EXIT_CANNOT_RUN) from None
        try:
            report = diagnose(app, path, history=history, laravel=laravel, celery=celery)
        except CannotRun as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_CANNOT_RUN) from None
        if output_format is Format.text:
            write_text(report, sys.stdout)
        else:
            data = to_json(report) if output_format is Format.json else to_sarif(report)
            sys.stdout.write(dumps(data))
        raise typer.Exit(report.exit_code(strict=strict))


def list_rules(output_format: Format) -> None:
    """Every rule with its id, severity and why; needs no extra (the index is plain Python)."""
    import json

    from tenure.doctor.rules import RULES

    if output_format is not Format.text:
        rows = [{"id": r.id, "severity": r.severity, "group": r.group, "title": r.title,
                 "why": r.why} for r in RULES.values()]  # fmt: skip
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    import shutil
    import textwrap

    width = max(len(r) for r in RULES)
    # the title and why under the id, wrapped to the terminal ($COLUMNS, 80 on a pipe)
    columns = max(40, shutil.get_terminal_size().columns)
    for rule in RULES.values():
        typer.echo(f"{rule.id:<{width}}  {rule.severity:<7}  {rule.group}")
        for text in (rule.title, rule.why):
            typer.echo(textwrap.fill(text, columns - 1, initial_indent="    ",
                                     subsequent_indent="    "))  # fmt: skip

"""The report three ways: text for people (Rich), JSON for scripts, SARIF 2.1.0 for code
scanning (GitHub shows each result on its file and line)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from tenure import __version__
from tenure.doctor.clocks import assumed_launch, serves
from tenure.doctor.model import Finding, Report, Source
from tenure.doctor.rules import RULES

SHOWN_SKIPPED = 8
STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def summary(report: Report) -> str:
    counts = ", ".join(f"{report.count(s)} {s}{'s' if report.count(s) != 1 else ''}"
                       for s in ("error", "warning"))  # fmt: skip
    return (
        f"{counts}, {report.count('info')} info · {len(report.jobs)} job(s), "
        f"{len(report.launches)} worker launch(es) · {report.files_read} file(s) read, "
        f"{len(report.skipped)} skipped"
    )


def write_text(report: Report, stream: TextIO, *, color: bool | None = None) -> None:
    # a pipe with no $COLUMNS (CI logs) gets 100 columns; a terminal or $COLUMNS, its width
    piped = not stream.isatty() and not os.environ.get("COLUMNS")
    console = Console(file=stream, highlight=False, force_terminal=color, no_color=color is False,
                      width=100 if piped else None)  # fmt: skip
    console.print(f"[bold]tenure doctor[/bold] {escape(report.root)}: {summary(report)}")
    for note in report.notes:
        console.print(f"[dim]{escape(note)}[/dim]")
    explained: set[str] = set()
    for f in report.findings:
        console.print()
        console.print(
            f"[{STYLE[f.severity]}]{f.severity}[/] [bold]{f.rule}[/bold]  {escape(str(f.location))}"
        )
        console.print(Padding(escape(f.message), (0, 0, 0, 2)))
        for clock in f.clocks:
            console.print(Padding(f"[dim]clock:[/dim] {escape(clock.text())}", (0, 0, 0, 4)))
        if f.rule not in explained:  # once per rule: a report of twenty is read, not skimmed
            explained.add(f.rule)
            console.print(Padding(f"[dim]why:[/dim] {escape(RULES[f.rule].why)}", (0, 0, 0, 4)))
        console.print(Padding(f"[green]fix:[/green] {escape(f.fix)}", (0, 0, 0, 4)))
    if report.jobs:
        console.print()
        console.print(_clock_table(report))
    if report.skipped:
        console.print()
        console.print(f"[dim]skipped {len(report.skipped)}:[/dim]")
        for item in report.skipped[:SHOWN_SKIPPED]:
            console.print(f"  [dim]{escape(item.path)}: {escape(item.reason)}[/dim]")
        if len(report.skipped) > SHOWN_SKIPPED:
            console.print(
                f"  [dim]... {len(report.skipped) - SHOWN_SKIPPED} more in --format json[/dim]"
            )
    if not report.findings:
        console.print()
        console.print("[green]no findings: the clocks are in order[/green]")


def _clock_table(report: Report) -> Table:
    table = Table(title="clocks per job (inner to outer)", title_justify="left")
    for column in ("job", "queue", "client calls", "timeout + kill_after", "worker grace",
                   "platform grace"):  # fmt: skip
        table.add_column(column)
    for job in report.jobs:
        calls = ", ".join(f"{c.call} {c.timeout.amount_text()}" for c in job.calls) or "-"
        timeout = (f"{job.timeout.amount_text()} + {job.kill_after.amount_text()}"
                   if job.timeout else "unknown")  # fmt: skip
        launches = [w for w in report.launches or [assumed_launch()] if serves(w, job.queue)]
        grace = ", ".join(f"{w.grace.amount_text()} ({w.name})" for w in launches) or "-"
        platform = ", ".join(
            f"{w.platform_grace.amount_text()} ({w.platform})" for w in launches if w.platform_grace
        ) or "-"  # fmt: skip
        table.add_row(job.name, job.queue, calls, timeout, grace, platform)
    return table


def to_json(report: Report) -> dict[str, Any]:
    return {
        "tool": "tenure doctor",
        "version": __version__,
        "root": report.root,
        "app": report.app_spec,
        "summary": {
            "errors": report.count("error"),
            "warnings": report.count("warning"),
            "info": report.count("info"),
            "files_read": report.files_read,
            "skipped": len(report.skipped),
        },
        "findings": [{**asdict(f), "why": RULES[f.rule].why} for f in report.findings],
        "jobs": [asdict(j) for j in report.jobs],
        "launches": [asdict(w) for w in report.launches],
        "skipped": [asdict(s) for s in report.skipped],
        "notes": report.notes,
    }


def to_sarif(report: Report) -> dict[str, Any]:
    rule_ids = list(RULES)
    rules = [
        {
            "id": rule.id,
            "name": "".join(part.title() for part in rule.id.split("-")),
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.why},
            "help": {"text": rule.why},
            "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
            "properties": {"tags": ["tenure", rule.group]},
        }
        for rule in RULES.values()
    ]
    results = [_result(f, rule_ids.index(f.rule), report.root) for f in report.findings]
    root_uri = Path(report.root).as_uri().rstrip("/") + "/"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tenure doctor",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"SRCROOT": {"uri": root_uri}},
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [
                            {"level": "note", "message": {"text": f"skipped {s.path}: {s.reason}"}}
                            for s in report.skipped
                        ],
                    }
                ],
                "results": results,
            }
        ],
    }


def _result(f: Finding, index: int, root: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": SARIF_LEVEL[f.severity],
        "message": {"text": f"{f.message} Fix: {f.fix}"},
        "partialFingerprints": {
            "tenureDoctor/v1": hashlib.sha256(
                f"{f.rule}|{f.location.path}|{f.job}|{f.message}".encode()
            ).hexdigest()[:32]
        },
        "properties": {"fix": f.fix, "clocks": [c.text() for c in f.clocks], "job": f.job},
    }
    location = _location(f.location)
    if location is not None:
        result["locations"] = [location]
    related = []
    for i, clock in enumerate(f.clocks):
        place = _location(clock.source)
        if place is not None:
            related.append({"id": i, **place, "message": {"text": clock.text()}})
    if related:
        result["relatedLocations"] = related
    return result


def _location(source: Source) -> dict[str, Any] | None:
    if source.path is None:
        return None
    path = Path(source.path)
    artifact = (
        {"uri": path.as_uri()}
        if path.is_absolute()
        else {"uri": path.as_posix(), "uriBaseId": "SRCROOT"}
    )
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if source.line and source.line >= 1:
        physical["region"] = {"startLine": source.line}
    return {"physicalLocation": physical}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"

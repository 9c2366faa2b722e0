"""Writes the reference pages under docs/ from the code itself, so that they cannot drift:
docs/cli.md from the `tenure` command tree (every command, argument and option, with its
help, default and environment variable) and docs/api.md from the public names of `tenure`
(signatures and docstrings). `./scripts/docs` runs it; tests/unit/test_reference_docs.py
fails when a page is out of date or names a command or name that does not exist."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import typer

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    return inspect.cleandoc(text).split("\n\n", 1)[0].replace("\n", " ")


def _body(text: str | None) -> str:
    return inspect.cleandoc(text) if text else ""


# -- the CLI -------------------------------------------------------------------------------
# Typer carries its own copy of click: its commands are read by what they have, not by class.
def commands(group: Any, prefix: tuple[str, ...] = ("tenure",)) -> list[tuple[str, Any]]:
    """Every command under `group`, depth first, named as typed: ("tenure jobs list", cmd)."""
    out: list[tuple[str, Any]] = []
    ctx = group.context_class(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = (*prefix, name)
        if hasattr(command, "list_commands"):
            out += commands(command, path)
        else:
            out.append((" ".join(path), command))
    return out


def _param_row(param: Any) -> str:
    if param.param_type_name == "argument":
        names = f"`{param.name.upper()}`"
        kind = "argument" + ("" if param.required else ", optional")
        return f"| {names} | {kind} | | |"
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    unset = param.default is None or (param.is_flag and not param.default)
    default = "" if unset else param.default
    if isinstance(default, tuple | list):
        default = ",".join(map(str, default))
    env = f"`${param.envvar}`" if isinstance(param.envvar, str) else ""
    help_text = (param.help or "").replace("|", "\\|")
    shown = f"`{default}`" if default != "" else ""
    return f"| {names} | {help_text} | {shown} | {env} |"


def render_cli() -> str:
    from tenure.cli import cli

    root = typer.main.get_command(cli)
    lines = [
        "# Command reference",
        "",
        "Generated from the `tenure` command by `./scripts/docs` (do not edit by hand). "
        "`tenure COMMAND --help` prints the same. Every command that reads a store takes "
        "`--url` > `$TENURE_URL` > the URL of `--app`'s App > `./tenure.db`.",
        "",
    ]
    for name, command in commands(root):
        lines += [f"## `{name}`", ""]
        help_text = _body(command.help)
        if help_text:
            lines += [help_text, ""]
        usage = " ".join(command.collect_usage_pieces(command.context_class(command)))
        lines += ["```", f"{name} {usage}".rstrip(), "```", ""]
        params = [p for p in command.params if p.name != "help"]
        if params:
            lines += ["| name | what | default | environment |", "|---|---|---|---|"]
            lines += [_param_row(p) for p in params]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# -- the Python API ------------------------------------------------------------------------
# classes whose public methods are listed (the others: their docstring alone)
WITH_METHODS = ("App", "Job", "JobHandle", "ChainHandle", "BatchHandle", "JobContext")
EXTRA = {
    "tenure.job.BoundJob": "what `Job.options(...)` returns",
    "tenure.hooks.Hooks": "`app.hooks`; `app.on_child_start` and `app.around_attempt` are its",
}


def _signature(obj: object) -> str:
    try:  # the annotations as written, not as quoted strings, where they resolve
        text = str(inspect.signature(obj, eval_str=True))  # type: ignore[arg-type]
    except (NameError, TypeError, ValueError, AttributeError):
        try:
            text = str(inspect.signature(obj))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return "(...)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties, the class's own first, then those it inherits from
    tenure's own classes (App's reading and operating half is tenure.control.Operations)."""
    out = []
    seen: set[str] = set()
    owners = [k for k in cls.__mro__ if k.__module__.startswith("tenure")] or [cls]
    for name, value in (item for owner in owners for item in vars(owner).items()):
        if name.startswith("_") or name in seen:
            continue
        seen.add(name)
        if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
            out.append((name, value))
    return out


def render_api() -> str:
    import tenure

    lines = [
        "# Python API reference",
        "",
        "Generated from the docstrings of `tenure`'s public names by `./scripts/docs` (do not "
        "edit by hand). The README explains the concepts; this page lists what to call.",
        "",
    ]
    for name in sorted(tenure.__all__, key=str.lower):
        obj = getattr(tenure, name)
        if inspect.isclass(obj):
            kind = "exception" if issubclass(obj, BaseException) else "class"
            lines += [f"## `tenure.{name}` ({kind})", ""]
            if kind == "class":
                lines += ["```text", f"tenure.{name}{_signature(obj)}", "```", ""]
            doc = _body(obj.__doc__)
            if not doc.startswith(f"{obj.__name__}("):  # a dataclass's made-up docstring
                lines += [doc, ""]
            if name in WITH_METHODS:
                for member, value in _members(obj):
                    fn = value.fget if isinstance(value, property) else value
                    fn = getattr(fn, "__func__", fn)
                    sig = "" if isinstance(value, property) else _signature(fn)
                    lines += [f"### `{name}.{member}{sig}`", ""]
                    doc = _first_paragraph(getattr(fn, "__doc__", None))
                    if doc:
                        lines += [doc, ""]
        elif callable(obj):
            lines += [f"## `tenure.{name}{_signature(obj)}`", "", _body(obj.__doc__), ""]
    for dotted, what in EXTRA.items():
        module, _, attr = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), attr)
        lines += [f"## `{dotted}` ({what})", "", _body(cls.__doc__), ""]
        for member, value in _members(cls):
            lines += [f"### `{attr}.{member}{_signature(value)}`", ""]
            doc = _first_paragraph(getattr(value, "__doc__", None))
            if doc:
                lines += [doc, ""]
    text = re.sub(r" at 0x[0-9a-f]+", "", "\n".join(lines))
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


# -- upgrading -----------------------------------------------------------------------------
def render_upgrading() -> str:
    from tenure.stores.postgres.schema import migrations as postgres_migrations
    from tenure.stores.redis.database import LAYOUT_VERSION, UPGRADABLE_LAYOUTS
    from tenure.stores.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS

    def listed(steps: list[Any]) -> list[str]:
        return [f"{m.version}. `{m.name}`" for m in steps]

    older = ", ".join(sorted(UPGRADABLE_LAYOUTS)) or "none"
    lines = [
        "# Upgrading a store",
        "",
        "Generated by `./scripts/docs` from the migrations this version ships (do not edit "
        "by hand). What `tenure migrate` does to a store an older tenure wrote, per engine. "
        "Every command and worker also does it on first use, so `tenure migrate` is only the "
        "way to do it ahead of a deploy, on purpose.",
        "",
        "Migrations add tables, columns and indexes (some replace an index); none removes a "
        "table or a column. Older workers running on an upgraded store are not tested: "
        "deploy the new code, let one process (or `tenure migrate`) upgrade the store, and "
        "ask the old workers to finish and exit (`tenure restart`).",
        "",
        "## SQLite",
        "",
        "The file's version is the row `schema_version` of `tenure_control`. Pending "
        "migrations run in one `BEGIN IMMEDIATE` transaction, the version read again once "
        "the lock is held: two processes opening an old file at once take turns. A file "
        "newer than this code is left alone. This version brings a file to version "
        f"{SQLITE_MIGRATIONS[-1].version}:",
        "",
        *listed(SQLITE_MIGRATIONS),
        "",
        "## PostgreSQL",
        "",
        "The schema's version is the highest row of `SCHEMA.tenure_schema_version` (one row "
        "per migration, with when it was applied). Pending migrations run in one transaction "
        "under an advisory lock per schema. A schema newer than this code is refused "
        "(`ConfigError`: upgrade tenure on that host). This version brings a schema to "
        f"version {len(postgres_migrations())}:",
        "",
        *listed(postgres_migrations()),
        "",
        "## Redis",
        "",
        "Redis has no schema: `migrate` records the key layout in `PREFIX:{g}:meta` (field "
        f"`layout`, now {LAYOUT_VERSION}) and refuses keys written in a newer layout. Older "
        f"layouts it upgrades in place: {older} (layout 4 keeps a job's attempt history in the "
        "job's own hash; the upgrade moves each queue's `att:ID` hashes there a page at a time, "
        "and marks the layout only once every queue is done, so an upgrade cut short is "
        "finished by the next `migrate` or worker start; layout 5 keeps no index of every job, "
        "and the upgrade deletes each queue's `all`; layout 6 numbers a new job by the "
        "server's clock, not a counter, and its upgrade rewrites nothing: its mark stops an "
        "older release's worker from starting). It also warns when `maxmemory-policy` "
        "could evict tenure's keys (set `noeviction`).",
    ]
    return "\n".join(lines).rstrip() + "\n"


PAGES = {"cli.md": render_cli, "api.md": render_api, "upgrading.md": render_upgrading}


def main() -> None:
    for page, render in PAGES.items():
        (DOCS / page).write_text(render())
        print(f"wrote docs/{page}")


if __name__ == "__main__":
    main()

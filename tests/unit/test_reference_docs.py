"""The reference pages under docs/ are generated from the code and stay so: each is what
`./scripts/docs` would write now, and every `tenure ...` command and `tenure.Name` that the
README or a docs page mentions exists (a renamed command fails here, not in a reader's shell)."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

import tenure
from tenure.cli import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "scripts" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["cli.md", "api.md", "upgrading.md"])
def test_each_generated_page_is_current(page: str) -> None:
    render = generator().PAGES[page]
    assert (ROOT / "docs" / page).read_text() == render(), f"run ./scripts/docs: {page} is stale"


def command_tree() -> dict[str, Any]:
    """{"jobs": {"list": None, ...}, "worker": None, ...}: the commands `tenure` has."""

    def walk(group: Any) -> dict[str, Any]:
        ctx = group.context_class(group)
        tree: dict[str, Any] = {}
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            tree[name] = walk(command) if hasattr(command, "list_commands") else None
        return tree

    return walk(typer.main.get_command(cli))


def code_of(text: str) -> list[str]:
    """The code a page shows: fenced blocks' lines and inline code spans."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [line for block in blocks for line in block.splitlines()] + inline


def mentioned_commands(text: str) -> set[tuple[str, ...]]:
    """`tenure WORD [WORD]` where a command line starts (a line, a span, after `$ ` or `| `)."""
    found = set()
    for code in code_of(text):
        for match in re.finditer(
            r"(?:^|\$ |\| |&& )tenure ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)", code
        ):
            found.add(tuple(match.group(1).split()))
    return found


def test_every_documented_command_exists() -> None:
    tree = command_tree()
    missing = []
    for page in PAGES:
        for words in mentioned_commands(page.read_text()):
            node = tree.get(words[0], "missing")
            if node == "missing":
                missing.append(f"{page.name}: tenure {' '.join(words)}")
            elif isinstance(node, dict) and (len(words) < 2 or words[1] not in node):
                missing.append(f"{page.name}: tenure {' '.join(words)}")  # a group's subcommand
    assert missing == [], missing
    # the generated page lists each command once
    listed = re.findall(r"^## `tenure ([a-z -]+)`$", (ROOT / "docs" / "cli.md").read_text(), re.M)
    leaves = [
        " ".join([name, *([sub] if sub else [])])
        for name, node in tree.items()
        for sub in (node or {None: None})
    ]
    assert sorted(listed) == sorted(leaves)


def resolves(dotted: str) -> bool:
    target: Any = tenure
    path = "tenure"
    for part in dotted.split("."):
        path += f".{part}"
        if hasattr(target, part):
            target = getattr(target, part)
            continue
        try:
            target = importlib.import_module(path)
        except ImportError:
            return False
    return True


PYTHON_NAME = r"(?<![\w/])tenure\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\()?"


def test_every_documented_python_name_exists() -> None:
    missing = []
    for page in PAGES:
        for code in code_of(page.read_text()):
            for name, call in re.findall(PYTHON_NAME, code):
                # a class or exception (tenure.App), or a call (tenure.current()); not the
                # dotted names of log fields and span attributes (tenure.job.id) or files
                if (name[0].isupper() or call) and not resolves(name):
                    missing.append(f"{page.name}: tenure.{name}")
    assert missing == [], sorted(set(missing))


def test_the_checks_catch_a_missing_command_and_name() -> None:
    """A quiet twin: the readers find what they must, so an empty list above means something."""
    text = "run `tenure jobs lst` then\n```sh\n$ tenure nosuch --x\n```\nand `tenure.Nope()`"
    assert mentioned_commands(text) == {("jobs", "lst"), ("nosuch",)}
    assert re.findall(PYTHON_NAME, "`tenure.Nope()` `tenure.job.id` `sqlite:///tenure.db`") == [
        ("Nope", "("),
        ("job.id", ""),
    ]
    assert not resolves("Nope") and resolves("testing.drain") and resolves("App.purge")

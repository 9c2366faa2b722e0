"""The documentation site (mkdocs.yml) builds with --strict: no warning of any kind, and every
link between its pages, anchors included, resolves (mkdocs.yml's `validation:` turns each broken
one into a warning). Every page under docs/ is in the nav, and the nav names no missing page."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import typer
import yaml

import tenure
import tenure.testing
from tenure import App

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor
    return subprocess.run(
        [*MKDOCS, "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def config() -> dict[str, object]:
    text = (ROOT / "mkdocs.yml").read_text()
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    output = done.stdout + done.stderr
    warnings = [line for line in output.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0 and warnings == [], output
    # the API reference was rendered from the docstrings, not left as `::: tenure.App` text
    api = (tmp_path / "site" / "python-api" / "index.html").read_text()
    assert 'id="tenure.App.batch"' in api and ":::" not in api


def test_every_page_is_in_the_nav() -> None:
    listed = nav_pages(config()["nav"])
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(listed) == pages


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """A quiet twin: the same validation settings on a two-page site with one broken link and
    one broken anchor fail the build, so a green build above means the links were checked."""
    settings = config()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[a](other.md#nowhere) and [b](missing.md)\n")
    (docs / "other.md").write_text("# Other\n\n## Somewhere\n")
    twin = {
        "site_name": "twin",
        "validation": settings["validation"],
        "markdown_extensions": settings["markdown_extensions"],
        "nav": ["index.md", "other.md"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(twin))
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "missing.md" in output and "#nowhere" in output


def tenure_column_code(text: str) -> list[str]:
    """The code spans of the last column of every table row: tenure's side of a mapping."""
    spans = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not set(cells[-1]) <= set("-: "):
            spans += re.findall(r"`([^`]+)`", cells[-1])
    return spans


def worker_flags() -> set[str]:
    from tenure.cli import cli

    root = typer.main.get_command(cli)
    worker = root.get_command(root.context_class(root), "worker")  # type: ignore[attr-defined]
    return {opt for param in worker.params for opt in param.opts}


def unknown_names(spans: list[str]) -> list[str]:
    """Every App method, handle method, keyword and worker flag a span names, that tenure lacks."""
    # @app.job's keywords are spelt out in its typed overload
    callables = [*typing.get_overloads(App.job), tenure.Job.options, App.batch, App.chain]
    callables.append(tenure.testing.assert_dispatched)
    keywords = {name for c in callables for name in inspect.signature(c).parameters}
    flags = worker_flags()
    missing = []
    for span in spans:
        missing += [f"app.{n}" for n in re.findall(r"\bapp\.(\w+)", span) if not hasattr(App, n)]
        missing += [
            f"h.{n}" for n in re.findall(r"\bh\.(\w+)", span) if not hasattr(tenure.JobHandle, n)
        ]
        missing += [
            f"job.{n}" for n in re.findall(r"\bjob\.(\w+)", span) if not hasattr(tenure.Job, n)
        ]
        if not span.startswith("tenure "):  # `--queues high=3` is not a keyword
            missing += [f"{k}=" for k in re.findall(r"(?<![\w.])(\w+)=", span) if k not in keywords]
        if span.startswith("tenure worker"):
            missing += [f for f in re.findall(r"(--[a-z-]+)", span) if f not in flags]
    return missing


def test_every_tenure_name_in_coming_from_exists() -> None:
    spans = tenure_column_code((ROOT / "docs" / "coming-from.md").read_text())
    assert len(spans) > 100, "the reader found too few names to mean anything"
    assert unknown_names(spans) == []


def test_the_name_check_catches_a_wrong_name() -> None:
    """A quiet twin: a misspelt method, keyword and flag are each caught."""
    row = "| x | `app.purj(q)`, `tries=`, `tris=3`, `tenure worker --queue a` |"
    text = f"| a | b |\n|---|---|\n{row}\n"
    spans = tenure_column_code(text)
    assert sorted(unknown_names(spans)) == ["--queue", "app.purj", "tris="]

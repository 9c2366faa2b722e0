"""The README is the front door: the two set-up commands first, the Quickstart, the essentials,
"How fast", and a link to the docs page of every concept, where the details live (it had grown
to 988 lines that repeated those pages). Its links resolve, anchors included, and it does not
pretend the site is published."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SETUP = (
    "./scripts/demo    # installs tenure into .venv and runs `tenure demo` on the embedded "
    "SQLite store\n"
    "./scripts/test    # installs the dev tools (and PostgreSQL/Redis if absent) and runs every "
    "test\n"
)


def slug(heading: str) -> str:
    """The anchor a heading gets (GitHub's rule, which MkDocs' toc follows for these)."""
    text = re.sub(r"[`*]", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def links(text: str) -> list[str]:
    """Relative link targets: not a scheme's (https:), not a bare anchor of a code span."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]


def nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page.read_text()):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    return broken


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert text.startswith(f"# tenure\n\n```sh\n{SETUP}```\n")  # the set-up, exactly, first
    lines = text.count("\n")
    assert lines < 300, f"the README has {lines} lines: the details belong in docs/"
    headings = re.findall(r"^## (.+)$", text, re.M)
    # other branches add to these two sections: their headings stay
    for kept in ["Quickstart", "What an attempt can end as", "Flow control", "How fast"]:
        assert kept in headings, kept
    fast = text.split("## How fast", 1)[1]
    for engine in ["PostgreSQL", "Redis", "SQLite"]:
        assert re.search(rf"^\| {engine} \| [\d,]+ jobs/s \|", fast, re.M), engine


def test_the_readme_links_every_concept_and_operations_page() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    wanted = {f"docs/{page}" for page in nav_pages(nav)} - {"docs/api.md"}  # api.md: a summary
    linked = {target.partition("#")[0] for target in links(README.read_text())}
    assert sorted(wanted - linked) == []


def test_the_readme_links_resolve_and_the_site_is_not_called_published() -> None:
    assert broken_links(README) == []
    text = README.read_text()
    assert "not published" in text and "./scripts/docs" in text
    assert not re.search(r"https?://[^\s)]*(readthedocs|github\.io|tenure\.dev)", text)


def test_the_link_check_finds_a_broken_file_and_anchor(tmp_path: Path) -> None:
    """A quiet twin: a missing file and a missing anchor are caught, a good pair is not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## The `four` clocks\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md#the-four-clocks) [no](docs/b.md) [bad](docs/a.md#nowhere) "
        "[web](https://example.com/x) [self](#a-title)\n\n# A title\n"
    )
    assert broken_links(page) == ["docs/b.md", "docs/a.md#nowhere"]

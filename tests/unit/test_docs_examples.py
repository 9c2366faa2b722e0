"""Every ```python example in README.md and under docs/ runs: each block alone, as a script in a
fresh directory, in its own process, with $TENURE_URL naming an SQLite file there. A block that
is deliberately a fragment says so on the line before it, `<!-- not-run: why -->`, and those
are counted: a page cannot quietly stop running its examples."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Fragments allowed across every page; raising it is a decision, not a side effect.
MAX_NOT_RUN = 2

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    code: str
    not_run: str | None  # the reason, for a marked fragment

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def examples_of(page: str, text: str) -> list[Example]:
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 1
        found.append(Example(page, line, match.group(1), marker.group(1) if marker else None))
    return found


def all_examples() -> list[Example]:
    return [
        example
        for page in PAGES
        for example in examples_of(page.relative_to(ROOT).as_posix(), page.read_text())
    ]


RUNNABLE = [e for e in all_examples() if e.not_run is None]


@pytest.mark.parametrize("example", RUNNABLE, ids=[e.name for e in RUNNABLE])
def test_the_example_runs(example: Example, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example.code)
    env = {
        **os.environ,
        "TENURE_URL": f"sqlite:///{tmp_path / 'tenure.db'}",
        "PYTHONPATH": str(tmp_path),
    }
    env.pop("TENURE_ENCRYPTION_KEY", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{example.name} failed:\n{done.stdout}\n{done.stderr}"


def test_fragments_are_few_and_say_why() -> None:
    fragments = [e for e in all_examples() if e.not_run is not None]
    assert len(RUNNABLE) >= 10, "the reader found too few examples to mean anything"
    assert len(fragments) <= MAX_NOT_RUN, [f"{e.name}: {e.not_run}" for e in fragments]


def test_the_reader_finds_blocks_and_markers() -> None:
    """A quiet twin: a marked fragment, a plain block and a non-Python block, told apart."""
    text = (
        "intro\n\n```python\nprint(1)\n```\n\n<!-- not-run: needs sentry_sdk -->\n"
        "```python\nimport sentry_sdk\n```\n\n```sh\ntenure worker\n```\n"
    )
    found = examples_of("page.md", text)
    assert [(e.line, e.code, e.not_run) for e in found] == [
        (3, "print(1)\n", None),
        (8, "import sentry_sdk\n", "needs sentry_sdk"),
    ]

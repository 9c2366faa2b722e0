"""README's "Flow control" section carries a short "Coming from" table (issue 31) and
docs/flow-control.md the fuller one: every README row is a row of the docs table, word for word,
so the two cannot drift apart; and the peers the issue names are all there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rows(text: str) -> list[str]:
    """The body rows of the first "| coming from | in tenure |" table in `text`."""
    table = text.split("| coming from | in tenure |\n|---|---|\n", 1)[1]
    return re.findall(r"^\|.*\|$", table.split("\n\n", 1)[0], re.M)


def flow_section(readme: str) -> str:
    return readme.split("## Flow control\n", 1)[1].split("\n## ", 1)[0]


def test_readme_flow_control_has_a_coming_from_table_drawn_from_the_docs() -> None:
    readme = rows(flow_section((ROOT / "README.md").read_text()))
    docs = rows((ROOT / "docs" / "flow-control.md").read_text())
    assert readme and set(readme) <= set(docs), set(readme) - set(docs)
    named = " ".join(readme)
    for peer in [
        "RQ `RateLimit",
        "WithoutOverlapping",
        "Redis::funnel",
        "Celery `rate_limit`",
        "Sidekiq",
        "Oban",
        "River",
        "Temporal fairness",
    ]:
        assert peer in named, peer


def test_a_row_the_docs_lack_is_caught() -> None:
    """A quiet twin: a README row that is not in the docs table shows as the difference."""
    docs = "| coming from | in tenure |\n|---|---|\n| A | `a=` |\n\nmore"
    readme = (
        "## Flow control\n\n| coming from | in tenure |\n|---|---|\n| A | `a=` |\n| B | `b=` |\n"
    )
    assert set(rows(flow_section(readme))) - set(rows(docs)) == {"| B | `b=` |"}

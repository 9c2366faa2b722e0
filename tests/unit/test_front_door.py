"""Everything a person sees reads the same API: the CLI and the dashboard go through App."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tenure"


def store_reaches(path: Path) -> list[str]:
    """`x.store` attribute reads in a module: each one a place that bypasses App."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "store"
    ]


def test_the_cli_and_the_dashboard_call_only_app() -> None:
    modules = [*PACKAGE.joinpath("cli").glob("*.py"), *PACKAGE.joinpath("web").glob("*.py")]
    assert len(modules) > 10  # the walk found the packages
    found = [place for path in modules for place in store_reaches(path)]
    assert found == [], f"reaches past App into app.store: {found}"

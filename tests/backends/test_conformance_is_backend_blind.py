"""The conformance suite never names a backend: it reads `store.capabilities` for what a store
can do and the `kit` fixture for what differs behind it, so a test cannot quietly hold one
backend to less than the others, and a new backend runs the suite unchanged."""

from __future__ import annotations

import ast
import re
from pathlib import Path

CONFORMANCE = Path(__file__).parents[1] / "conformance"
NAMES = re.compile(r"sqlite|postgres|redis|psycopg|\bpg_", re.IGNORECASE)


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes: prose may say which backend a rule comes from."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def backend_names(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    skip = docstrings(tree)
    hits: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            texts.append(node.value)
        elif isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            texts.append(node.name)
        elif isinstance(node, ast.arg):
            texts.append(node.arg)
        elif isinstance(node, ast.alias):
            texts.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            texts.append(node.module or "")
        hits += [(getattr(node, "lineno", 0), t) for t in texts if NAMES.search(t)]
    return hits


def test_no_conformance_test_names_a_backend() -> None:
    found = {
        path.name: hits
        for path in sorted(CONFORMANCE.glob("*.py"))
        if path.name != "conftest.py"  # the one place that lists the backends to run
        and (hits := backend_names(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_sees_names_in_code_and_strings() -> None:
    source = (
        '"""Docs may say SQLite."""\n'
        "def test_redis_only(backend: str) -> None:\n"
        "    if backend == 'postgres':\n"
        "        import sqlite3\n"
    )
    assert [t for _, t in backend_names(source)] == ["test_redis_only", "postgres", "sqlite3"]

"""No import cycle under src/tenure, the worker included: each module's imports, at any
depth (inside functions and under TYPE_CHECKING too, since a cycle hidden in a function is
still two modules that cannot be understood, tested or moved one without the other), read
with ast, walked for strongly connected components."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tenure

ROOT = Path(tenure.__file__).parent


def module_name(path: Path) -> str:
    parts = ["tenure", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The tenure modules one module imports; `from pkg import mod` names pkg.mod."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import tenure.x.y` of a name inside x
                target = target.rpartition(".")[0]
            if target.startswith("tenure") and target != name:
                yield target


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: set(imported(name, path, known)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_walk_finds_every_cycle_and_only_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]


def test_imports_in_functions_under_type_checking_and_relative_ones_count(
    tmp_path: Path,
) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tenure.app import App\n"
        "def later():\n"
        "    import tenure.stores.base\n"
        "from . import sqlite\n"
    )
    known = {"tenure.app", "tenure.stores", "tenure.stores.base", "tenure.stores.sqlite"}
    found = set(imported("tenure.stores.mod", module, known))
    assert found == {"tenure.app", "tenure.stores.base", "tenure.stores.sqlite"}


def test_the_graph_reads_from_imports_of_a_module_and_of_a_package() -> None:
    graph = import_graph()
    assert "tenure.stores.sqlite.guards" in graph["tenure.stores.sqlite.jobs"]
    assert "tenure.stores.base" in graph["tenure.stores"]


def test_core_imports_nothing_of_tenure_outside_core() -> None:
    upward = {
        f"{name} -> {target}"
        for name, targets in import_graph().items()
        if name == "tenure.core" or name.startswith("tenure.core.")
        for target in targets
        if target != "tenure.core" and not target.startswith("tenure.core.")
    }
    assert upward == set()
    assert len(list(ROOT.joinpath("core").glob("*.py"))) > 8  # the walk found the rules


def test_the_top_level_holds_at_most_21_modules() -> None:
    # a map with a legend: the front door and what it needs; rules, presentation and test
    # helpers live in rooms of their own (core, cli, web, worker, stores, doctor)
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert "app.py" in top and len(top) <= 21, top


def test_the_dashboard_does_not_import_the_worker() -> None:
    reaches = {
        f"{name} -> {target}"
        for name, targets in import_graph().items()
        if name.startswith("tenure.web.")
        for target in targets
        if target == "tenure.worker" or target.startswith("tenure.worker.")
    }
    assert reaches == set()
    assert "tenure.web.command" in import_graph()  # the walk found the dashboard

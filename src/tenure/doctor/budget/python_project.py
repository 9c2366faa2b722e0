"""The project a Python unit's calls lead into: its functions and methods by name (files not yet
parsed are searched when a call needs them), and the small syntax helpers every reader uses."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from tenure.doctor.astutil import FunctionNode, Module
from tenure.doctor.budget.model import Costly
from tenure.doctor.walk import FoundFile


@dataclass
class Project:
    """What following a call needs: module-level functions and methods by name. Files not yet
    parsed are searched for `def NAME(` when a call needs them, and parsed then."""

    functions: dict[str, list[FunctionNode]] = field(default_factory=dict)
    methods: dict[str, list[FunctionNode]] = field(default_factory=dict)
    classes: dict[int, str] = field(default_factory=dict)  # id(method) -> its class, lowered
    sources: list[FoundFile] = field(default_factory=list)
    parsed: set[str] = field(default_factory=set)
    _looked_up: set[str] = field(default_factory=set)
    _effects: dict[int, list[Costly]] = field(default_factory=dict)
    homes: dict[int, Module] = field(default_factory=dict)  # id(function) -> its module
    _owned: dict[str, bool] = field(default_factory=dict)  # dotted import -> in the project
    _relative: dict[str, set[str]] = field(default_factory=dict)  # path -> relative imports

    def defined(self, name: str, *, method: bool) -> list[FunctionNode]:
        if name not in self._looked_up:
            self._looked_up.add(name)
            needle = f"def {name}(".encode()
            for found in self.sources:
                if found.path not in self.parsed and needle in found.data:
                    module = light_module(found)
                    if module is not None:
                        self.add(module)
        return (self.methods if method else self.functions).get(name, [])

    def owns(self, imported: str) -> bool:
        """Is `shop.services` (or `shop.services.Reminder`) a module of this project, not a
        library's? Its file is among the sources."""
        if imported not in self._owned:
            parts = imported.split(".")
            paths = {"/".join(parts[:n]) for n in (len(parts), len(parts) - 1) if n > 0}
            ends = tuple(f"/{p}{tail}" for p in paths for tail in (".py", "/__init__.py"))
            self._owned[imported] = any(
                ("/" + f.rel.replace("\\", "/")).endswith(ends) for f in self.sources
            )
        return self._owned[imported]

    def imported_here(self, module: Module, name: str) -> bool:
        """Is `name` a module or class of this project imported into `module`: `from shop
        import services`, `from .services import Reminder` (a relative import is always
        the project's own)?"""
        if module.path not in self._relative:
            self._relative[module.path] = {
                alias.asname or alias.name
                for node in ast.walk(module.tree)
                if isinstance(node, ast.ImportFrom) and node.level > 0
                for alias in node.names
            }
        if name in self._relative[module.path]:
            return True
        imported = module.aliases.get(name, "")
        return bool(imported) and self.owns(imported)

    def add(self, module: Module) -> None:
        self.parsed.add(module.path)
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, []).append(node)
                self.homes[id(node)] = module
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.methods.setdefault(item.name, []).append(item)
                        self.classes[id(item)] = node.name.lower()
                        self.homes[id(item)] = module


def light_module(found: FoundFile) -> Module | None:
    """A Module with its top-level definitions and imports, without walking every node as
    Module.parse does for the tenure checks: most files read here are only searched."""
    try:
        tree = ast.parse(found.data, filename=found.rel)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return None  # the tenure checks report what they could not parse
    module = Module(found.path, found.rel, tree)
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                module.constants[node.targets[0].id] = node.value
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module.aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                module.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.If):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
            todo += [s for handler in node.handlers for s in handler.body]
    return module


def dotted(expr: ast.expr) -> str:
    """`a.b.c` for a chain of names, attributes and calls (calls shown as `()`)."""
    parts: list[str] = []
    while True:
        if isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Call):
            parts.append("()")
            expr = expr.func
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Name):
            parts.append(expr.id)
            break
        else:
            break
    return ".".join(reversed(parts)).replace(".()", "()")


def call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `body`, not entering nested function or class definitions."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                stack.append(child)

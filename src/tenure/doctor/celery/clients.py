"""Network calls in Celery tasks: in the task, the same module's helpers it calls, and one
level into a helper it imports from the project (`from app.feeds import fetch` then
`fetch(url)`), each with the timeout that bounds it. A task waiting on a silent server holds
its worker process until its time limit, or forever when it has none."""

from __future__ import annotations

import ast
import os

from tenure.doctor.astutil import FunctionNode, Module
from tenure.doctor.celery.settings import TaskDef
from tenure.doctor.clients import find_client_calls
from tenure.doctor.model import ClientCall, Finding, Source, Value
from tenure.doctor.rules import finding


class Modules:
    """The project's Python files, parsed when first needed: a task's module, or a module
    a task imports a helper from."""

    def __init__(self, files: dict[str, tuple[str, bytes]]) -> None:
        self.files = files  # rel -> (path, data)
        self.parsed: dict[str, Module | None] = {}
        self.by_dotted = {_dotted(rel): rel for rel in files}

    def get(self, rel: str) -> Module | None:
        if rel not in self.parsed:
            path, data = self.files.get(rel, ("", b""))
            try:
                self.parsed[rel] = Module.parse(path, rel, data) if path else None
            except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
                self.parsed[rel] = None
        return self.parsed[rel]

    def dotted(self, owner: str) -> Module | None:
        """`app.feeds`, also when the project keeps its code under src/ or a subfolder."""
        rel = self.by_dotted.get(owner)
        if rel is None and owner:
            found = [r for d, r in self.by_dotted.items() if d.endswith("." + owner)]
            rel = found[0] if len(found) == 1 else None
        return self.get(rel) if rel is not None else None


def task_calls(tasks: list[TaskDef], modules: Modules) -> list[tuple[TaskDef, ClientCall]]:
    out: list[tuple[TaskDef, ClientCall]] = []
    for task in tasks:
        module = modules.get(task.source.path or "")
        function = module.functions.get(task.name) if module is not None else None
        if module is None or function is None or task.is_class:
            continue
        seen: set[int] = set()
        for call in find_client_calls(function, module) + _imported(function, module, modules):
            if id(call) not in seen:
                seen.add(id(call))
                out.append((task, call))
    return out


def _imported(function: FunctionNode, module: Module, modules: Modules) -> list[ClientCall]:
    """Calls inside project functions the task calls by an imported name, one level."""
    out: list[ClientCall] = []
    aliases = {**module.aliases, **_relative(module)}
    for node in module.nodes(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        dotted = aliases.get(node.func.id, "")
        owner, _, name = dotted.rpartition(".")
        helper_module = modules.dotted(owner)
        helper = helper_module.functions.get(name) if helper_module is not None else None
        if helper_module is None or helper is None:
            continue
        for call in find_client_calls(helper, helper_module):
            call.via = call.via or f"{owner}.{name}"
            out.append(call)
    return out


def _relative(module: Module) -> dict[str, str]:
    """`from .views import request_call` in api/tasks.py: request_call -> api.views.request_call."""
    package = _dotted(module.rel).split(".")
    inside = 0 if module.rel.endswith("__init__.py") else 1  # a package's __init__ is itself
    out: dict[str, str] = {}
    for node in module.tree.body:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package[: len(package) - node.level + 1 - inside]
            owner = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                out[alias.asname or alias.name] = f"{owner}.{alias.name}"
    return out


def _dotted(rel: str) -> str:
    stem = rel[:-3] if rel.endswith(".py") else rel
    stem = stem.removesuffix(os.sep + "__init__")
    return stem.replace(os.sep, ".").lstrip(".")


def client_findings(pairs: list[tuple[TaskDef, ClientCall]]) -> list[Finding]:
    out: list[Finding] = []
    said: set[tuple[str | None, int | None]] = set()
    for task, call in pairs:
        if (call.source.path, call.source.line) in said:
            continue  # a helper several tasks call: one finding, where the call is
        said.add((call.source.path, call.source.line))
        own = task.options.get("time_limit")
        limit = own.value if own is not None and isinstance(own.value, int | float) else None
        where = f" (in {call.via}())" if call.via else ""
        suggestion = f"{max(1, round(limit / 2))}" if limit and limit > 2 else "10"
        fix = f"pass timeout={suggestion} to {call.call}(...)"
        if call.timeout.amount is None:
            out.append(finding(
                "client-timeout-missing",
                f"Celery task '{task.name}' calls {call.call}(){where} with no timeout "
                f"({call.timeout.source}): if the server stops answering, the task holds its "
                "worker process until its time limit ends it, or forever without one.",
                fix, call.source, clocks=(call.timeout,), job=task.name))  # fmt: skip
        elif limit is not None and call.timeout.amount >= limit:
            bound = Value(
                f"{task.name} time_limit", float(limit), "s", own.source if own else Source()
            )
            out.append(finding(
                "client-timeout-not-below-job",
                f"Celery task '{task.name}' (time_limit {limit:g} s) calls {call.call}(){where} "
                f"with a {call.timeout.amount:g} s timeout: the task can be killed mid-call while "
                "the request still completes on the other side.",
                fix, call.source, clocks=(call.timeout, bound), job=task.name))  # fmt: skip
    return out

"""The code a Celery task runs: its body and the project functions it calls, followed through
the project's own imports (`from pkg.etl import xpro; xpro.extract()`, `from x import f; f()`,
`Loader(...).run()`, `self.fetch()`) a few calls deep, and the network calls in them.

Only code reached from a task is read: a web view's `requests.get` is not a job's. A call the
reader cannot resolve to one project function (a method of an object passed in, a function
handed around as a value) is not followed, and the report's notes say how many were not.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from tenure.doctor.astutil import FunctionNode, Module
from tenure.doctor.clients import CLIENTS, SPECS, client_calls_in, handed_calls_in
from tenure.doctor.model import ClientCall, Finding, Source
from tenure.doctor.rules import finding
from tenure.doctor.walk import FoundFile

DEPTH = 4  # calls followed from the task body: task -> etl module -> helper -> helper
# A file with none of these defines no Celery task; skipping the rest keeps the search fast.
TASK_MARKERS = (b"task",)


@dataclass
class Reached:
    """A function a task runs, and the chain of calls that led there."""

    fn: FunctionNode
    module: Module
    owner: ast.ClassDef | None
    chain: tuple[str, ...]
    # Parameters handed a client function: `_request(requests.post, ...)` -> {"func": ...}.
    handed: dict[str, str] = field(default_factory=dict)


@dataclass
class Reach:
    findings: list[Finding] = field(default_factory=list)
    tasks: int = 0
    functions: int = 0
    not_followed: int = 0  # calls of project functions or methods that could not be resolved

    def note(self) -> str:
        return (
            f"Celery task code: {self.tasks} task(s) followed into {self.functions} "
            f"function(s) of the project, {DEPTH} calls deep; {self.not_followed} call(s) of "
            "project functions not followed (re-exported, made at run time, or inherited)"
        )


class Project:
    """The project's Python modules by dotted name, parsed when first needed."""

    def __init__(self, files: list[FoundFile], base: str) -> None:
        self.base = base
        self.files: dict[str, FoundFile] = {}
        self.names: dict[str, str] = {}  # a file's rel -> its dotted name
        self._parsed: dict[str, Module | None] = {}
        self.stars: dict[str, list[str]] = {}  # a module's path -> what it imports with *
        for found in files:
            rel = os.path.relpath(found.path, base)
            parts = rel[:-3].split(os.sep) if rel.endswith(".py") else []
            if not parts or any(not p.isidentifier() for p in parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            # Every suffix names the module: `src/app/etl.py` is imported as `app.etl`.
            for start in range(len(parts)):
                self.files.setdefault(".".join(parts[start:]), found)
            self.names[rel] = ".".join(parts)

    def module(self, dotted: str) -> Module | None:
        found = self.files.get(dotted)
        if found is None:
            return None
        key = found.path
        if key not in self._parsed:
            try:
                rel = os.path.relpath(found.path, self.base)
                self._parsed[key] = Module.parse(found.path, rel, found.data)
                parsed = self._parsed[key]
                assert parsed is not None
                self.stars[key] = _relative_imports(parsed, self.names.get(rel, ""), rel)
            except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
                self._parsed[key] = None
        return self._parsed[key]

    def split(self, dotted: str) -> tuple[Module, list[str]] | None:
        """`pkg.etl.xpro.extract` -> (the pkg/etl/xpro.py module, ["extract"])."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.module(".".join(parts[:cut]))
            if module is not None:
                return module, parts[cut:]
        return None


def _relative_imports(module: Module, dotted: str, rel: str) -> list[str]:
    """`from .utils import f`, `from . import xpro`: Module.parse leaves them out. Returns
    the modules imported with `from x import *`, whose names the module then has."""
    package = dotted.split(".") if rel.endswith("__init__.py") else dotted.split(".")[:-1]
    stars: list[str] = []
    for node in module.nodes():
        if not isinstance(node, ast.ImportFrom):
            continue
        prefix = node.module or ""
        if node.level > 0:
            up = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            prefix = ".".join([*up, *([node.module] if node.module else [])])
        for alias in node.names:
            if alias.name == "*":
                stars.append(prefix)
            elif node.level > 0:
                module.aliases.setdefault(alias.asname or alias.name, f"{prefix}.{alias.name}")
    return stars


def find_tasks(project: Project, files: list[FoundFile]) -> list[Reached]:
    """Functions decorated as Celery tasks, and the `run` of class-based tasks."""
    out: list[Reached] = []
    for found in files:
        if not any(m in found.data for m in TASK_MARKERS):
            continue
        rel = os.path.relpath(found.path, project.base)
        dotted = project.names.get(rel)
        module = project.module(dotted) if dotted else None
        if module is None:
            continue
        for node in module.nodes():
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                _is_task_decorator(d) for d in node.decorator_list
            ):
                out.append(Reached(node, module, None, (node.name,)))
            elif isinstance(node, ast.ClassDef) and any(
                _dotted(b).rsplit(".", 1)[-1].endswith("Task") for b in node.bases
            ):
                run = _method(node, "run")
                if run is not None:
                    out.append(Reached(run, module, node, (node.name,)))
    return out


def _is_task_decorator(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id in ("shared_task", "task")
    return isinstance(target, ast.Attribute) and target.attr in ("task", "shared_task")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return getattr(node, "id", "")


def _method(cls: ast.ClassDef, name: str) -> FunctionNode | None:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
            return item
    return None


def _classes(module: Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in module.tree.body if isinstance(n, ast.ClassDef)}


class Walker:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.not_followed: set[tuple[str, int]] = set()

    def reach(self, task: Reached) -> list[Reached]:
        seen = {id(task.fn)}
        out = [task]
        todo = [(task, 0)]
        while todo:
            current, level = todo.pop()
            if level >= DEPTH:
                continue
            for callee in self._callees(current):
                if id(callee.fn) in seen:
                    continue
                seen.add(id(callee.fn))
                out.append(callee)
                todo.append((callee, level + 1))
        return out

    def _callees(self, at: Reached) -> list[Reached]:
        module = at.module
        made = _instances(at.fn, module)
        out: list[Reached] = []
        for node in module.nodes(at.fn):
            if not isinstance(node, ast.Call):
                continue
            for fn, where, owner in self._resolve(node.func, at, made):
                name = f"{owner.name}.{fn.name}" if owner is not None else fn.name
                handed = _handed(node, fn, module, method=owner is not None)
                out.append(Reached(fn, where, owner, (*at.chain, name), handed))
        return out

    def _resolve(
        self, func: ast.expr, at: Reached, made: dict[str, str]
    ) -> list[tuple[FunctionNode, Module, ast.ClassDef | None]]:
        module = at.module
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and at.owner:
                found = _method(at.owner, func.attr)
                return [(found, module, at.owner)] if found is not None else []
            if isinstance(receiver, ast.Name) and receiver.id in made:
                return self._member(f"{made[receiver.id]}.{func.attr}", module, func)
            if isinstance(receiver, ast.Call):  # Loader(...).run()
                cls = module.qualify(receiver.func)
                return self._member(f"{cls}.{func.attr}", module, func) if cls else []
        if isinstance(func, ast.Name):
            local = _made_by(module.nodes(at.fn), func.id)
            if local is not None and func.id not in made:
                return self._composed(local, module)
        dotted = module.qualify(func)
        return self._member(dotted, module, func) if dotted else []

    def _member(
        self, dotted: str, module: Module, func: ast.expr
    ) -> list[tuple[FunctionNode, Module, ast.ClassDef | None]]:
        """A dotted name as seen from `module`: its own function or class, or one imported."""
        head = dotted.split(".")
        star = self._star(head[0], module) if head[0] not in module.aliases else None
        if head[0] in module.functions or head[0] in _classes(module):
            where, rest = module, head
        elif star is not None:
            where, rest = star, head
        else:
            split = self.project.split(dotted)
            if split is None:
                return []  # a library's, or a local variable's method: not project code
            where, rest = split
            if where is module and not rest:
                return []
        if len(rest) == 1 and rest[0] in where.functions:
            return [(where.functions[rest[0]], where, None)]
        made = _made_by(where.tree.body, rest[0]) if len(rest) == 1 else None
        if made is not None:
            return self._composed(made, where)
        classes = _classes(where)
        if rest and rest[0] in classes:
            cls = classes[rest[0]]
            name = rest[1] if len(rest) == 2 else "__init__" if len(rest) == 1 else None
            found = _method(cls, name) if name else None
            if found is not None:
                return [(found, where, cls)]
            if len(rest) == 1:
                return []  # a class with no __init__ of its own: nothing to run
        # A project name that is no function here (re-exported, made at run time), or a
        # method its class inherits: not followed. `Model.objects.filter()`, `logger.info()`
        # call a library through a project object: not the project's code, not counted.
        if len(rest) == 1 or (len(rest) == 2 and rest[0] in classes):
            self.not_followed.add((module.rel, getattr(func, "lineno", 0)))
        return []

    def _composed(
        self, made: ast.Call, where: Module
    ) -> list[tuple[FunctionNode, Module, ast.ClassDef | None]]:
        """A name bound to a call's result, then called: `etl = compose(load, xpro.extract)`
        runs the functions it was composed of; `extract, _ = factory(config)` runs what the
        factory defines (its nested functions are read with it)."""
        out: list[tuple[FunctionNode, Module, ast.ClassDef | None]] = []
        for part in (made.func, *made.args):
            if isinstance(part, ast.Name | ast.Attribute):
                dotted = where.qualify(part)
                if dotted:
                    out += self._member(dotted, where, part)
        return out

    def _star(self, name: str, module: Module) -> Module | None:
        """The module a name came from through `from x import *` (one level), if any."""
        for dotted in self.project.stars.get(module.path, []):
            source = self.project.module(dotted)
            if source is not None and (name in source.functions or name in _classes(source)):
                return source
        return None


def _handed(call: ast.Call, fn: FunctionNode, module: Module, *, method: bool) -> dict[str, str]:
    """The callee's parameters this call hands a client function (`requests.post`)."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if method and params and params[0] in ("self", "cls"):
        params = params[1:]
    given = [*zip(params, call.args, strict=False)]
    given += [(k.arg, k.value) for k in call.keywords if k.arg]
    out: dict[str, str] = {}
    for param, value in given:
        name = module.qualify(value) if isinstance(value, ast.Attribute | ast.Name) else None
        if name in SPECS and name not in CLIENTS:
            out[param] = name
    return out


def _made_by(nodes: list[ast.stmt] | list[ast.AST], name: str) -> ast.Call | None:
    """The call whose result `name` is bound to: `name = f(...)`, `name, other = f(...)`."""
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            if isinstance(node.value, ast.Call) and any(
                isinstance(n, ast.Name) and n.id == name for n in names
            ):
                return node.value
    return None


def _instances(fn: FunctionNode, module: Module) -> dict[str, str]:
    """`loader = Loader(...)` in the function: the name's class, as a dotted name."""
    out: dict[str, str] = {}
    for node in module.nodes(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            name = module.qualify(node.value.func)
            last = (name or "").rsplit(".", 1)[-1]
            if name and last[:1].isupper():
                out[node.targets[0].id] = name
    return out


def check_reach(files: list[FoundFile], base: str) -> Reach:
    """client-timeout-missing for the calls Celery tasks reach, one finding per call line."""
    project = Project(files, base)
    tasks = find_tasks(project, files)
    walker = Walker(project)
    result = Reach(tasks=len(tasks))
    reported: set[tuple[str, int | None]] = set()
    functions: set[int] = set()
    for task in tasks:
        for reached in walker.reach(task):
            functions.add(id(reached.fn))
            mounted = _mounted(reached)
            calls = client_calls_in(reached.fn, reached.module)
            calls += handed_calls_in(reached.fn, reached.module, reached.handed)
            for call in calls:
                where = (call.source.path or "", call.source.line)
                if call.timeout.amount is not None or where in reported:
                    continue
                if call.call.split(".", 1)[0] in mounted:
                    continue  # a session with a mounted adapter: its timeout is the adapter's
                reported.add(where)
                result.findings.append(_finding(task, reached, call))
    result.functions = len(functions)
    result.not_followed = len(walker.not_followed)
    return result


def _mounted(reached: Reached) -> set[str]:
    """Names of sessions that get an adapter mounted (`s.mount("https://", Adapter(...))`),
    in the function or at module level: the adapter may carry the timeout."""
    return {
        node.func.value.id
        for node in reached.module.nodes()
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "mount"
        and isinstance(node.func.value, ast.Name)
    }


def _finding(task: Reached, reached: Reached, call: ClientCall) -> Finding:
    path = " -> ".join(f"{name}()" for name in reached.chain)
    via = f" through {path}" if len(reached.chain) > 1 else ""
    return finding(
        "client-timeout-missing",
        f"Celery task '{task.chain[0]}' calls {call.call}(){via} with no timeout "
        f"({call.timeout.source}): if the server stops answering, the call holds the worker "
        "until the task's time limit kills it, or forever when it has none.",
        f"pass timeout=10 to {call.call}(...), below the task's time limit",
        Source(call.source.path, call.source.line),
    )

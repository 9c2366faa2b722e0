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

from tenure.doctor.astutil import FunctionNode, Module, sleeps_in_loops
from tenure.doctor.clients import (
    CLIENTS,
    SESSIONS,
    SPECS,
    client_calls_in,
    handed_calls_in,
    instance_bindings,
    suggest_timeout,
)
from tenure.doctor.model import ClientCall, Finding, Source, Value
from tenure.doctor.reach_names import Names, Project, Target, made_by
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
    home: Module | None = None  # the module that defines `owner`
    # Parameters defaulting to None the call left out: `send(..., timeout=None)` called
    # without a timeout makes its `requests.post(url, timeout=timeout)` unbounded.
    unset: frozenset[str] = frozenset()


@dataclass
class Reach:
    findings: list[Finding] = field(default_factory=list)
    tasks: int = 0
    names: set[str] = field(default_factory=set)  # the tasks' function or class names
    functions: int = 0
    not_followed: int = 0  # calls of project functions or methods that could not be resolved

    def note(self) -> str:
        return (
            f"Celery task code: {self.tasks} task(s) followed into {self.functions} "
            f"function(s) of the project, {DEPTH} calls deep; {self.not_followed} call(s) of "
            "project functions not followed (made at run time, or a library's method)"
        )


def find_tasks(names: Names, files: list[FoundFile]) -> list[Reached]:
    """Functions decorated as Celery tasks, and the `run` of class-based tasks (its own, or
    one a project base class defines)."""
    project = names.project
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
                _is_task_decorator(d, module) for d in node.decorator_list
            ):
                out.append(Reached(node, module, None, (node.name,)))
            elif isinstance(node, ast.ClassDef) and any(
                _dotted(b).rsplit(".", 1)[-1].endswith("Task") for b in node.bases
            ):
                run = names.method(node, module, "run")
                inherited = run is not None and run.label != f"{node.name}.run"
                if inherited and not _celery_task_class(names, node, module):
                    continue  # `class ImportTask(ImportExportTask)` of a Django model: no task
                if run is not None:
                    out.append(Reached(run.fn, run.module, node, (node.name,), home=module))
    return out


# Libraries whose `@task` is no Celery task: build scripts (a project's root tasks.py).
NOT_CELERY = ("invoke", "fabric")


def _is_task_decorator(decorator: ast.expr, module: Module) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        if target.id in module.functions:  # `def task(...)`: the file's own wrapper
            return False
        origin = (module.qualify(target) or "").split(".")[0]
        return target.id in ("shared_task", "task") and origin not in NOT_CELERY
    return isinstance(target, ast.Attribute) and target.attr in ("task", "shared_task")


def _celery_task_class(names: Names, cls: ast.ClassDef, module: Module) -> bool:
    """The class or a project base of it derives from Celery's `Task` itself."""
    return any(
        _dotted(base).rsplit(".", 1)[-1] == "Task"
        for current, _ in names.lineage(cls, module)
        for base in current.bases
    )


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return getattr(node, "id", "")


class Walker:
    def __init__(self, names: Names) -> None:
        self.names = names

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
            for t in self._resolve(node.func, at, made):
                method = t.owner is not None
                handed = _handed(node, t.fn, module, method=method)
                chain = (*at.chain, t.label or t.fn.name)
                unset = _unset(node, t.fn, method=method)
                out.append(Reached(t.fn, t.module, t.owner, chain, handed, t.home, unset))
        for t in self._properties(at, made):
            out.append(Reached(t.fn, t.module, t.owner, (*at.chain, t.label), {}, t.home))
        return out

    def _properties(self, at: Reached, made: dict[str, str]) -> list[Target]:
        """Properties the function reads: `self.api_headers`, `addon.github_token` run code
        (a token fetched over HTTP) as surely as a call does."""
        out: list[Target] = []
        for node in at.module.nodes(at.fn):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            holder = self._class_of(node.value, at, made)
            found = self.names.method(*holder, node.attr) if holder else None
            if found is not None and is_property(found.fn):
                out.append(found)
        return out

    def _class_of(
        self, expr: ast.expr, at: Reached, made: dict[str, str], hops: int = 0
    ) -> tuple[ast.ClassDef, Module] | None:
        """The project class an expression is an instance of: `self`, a row or object made in
        the function, or a relation of one (`self.github_installation`, a ForeignKey field)."""
        if isinstance(expr, ast.Name):
            if expr.id in ("self", "cls") and at.owner is not None:
                return at.owner, at.home or at.module
            return self.names.cls(made[expr.id], at.module) if expr.id in made else None
        if isinstance(expr, ast.Attribute) and hops < 2:
            holder = self._class_of(expr.value, at, made, hops + 1)
            return self.names.related(*holder, expr.attr) if holder else None
        return None

    def _resolve(self, func: ast.expr, at: Reached, made: dict[str, str]) -> list[Target]:
        module, names = at.module, self.names
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and at.owner:
                # Looked up from the instance's class: a base's method calling self.fetch()
                # runs the subclass's fetch when it has one.
                found = names.method(at.owner, at.home or module, func.attr)
                return [found] if found is not None else []
            if isinstance(receiver, ast.Name) and receiver.id in made:
                return names.member(f"{made[receiver.id]}.{func.attr}", module, func)
            if isinstance(receiver, ast.Call):  # Loader(...).run()
                cls = module.qualify(receiver.func)
                return names.member(f"{cls}.{func.attr}", module, func) if cls else []
            if isinstance(receiver, ast.Attribute):  # self.installation.refresh()
                holder = self._class_of(receiver, at, made)
                found = names.method(*holder, func.attr) if holder else None
                if found is not None:
                    return [found]
        if isinstance(func, ast.Name):
            local = made_by(module.nodes(at.fn), func.id)
            if local is not None and func.id not in made:
                return names.composed(local, module)
        dotted = module.qualify(func)
        return names.member(dotted, module, func) if dotted else []


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


def _unset(call: ast.Call, fn: FunctionNode, *, method: bool) -> frozenset[str]:
    """The callee's parameters that default to None and that this call does not pass."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return frozenset()  # *args / **kwargs may pass anything
    positional = [*fn.args.posonlyargs, *fn.args.args]
    skip = 1 if method and positional and positional[0].arg in ("self", "cls") else 0
    passed = {a.arg for a in positional[skip : skip + len(call.args)]}
    passed |= {k.arg for k in call.keywords if k.arg}
    defaults = [
        *zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults, strict=True),
        *((a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d),
    ]
    return frozenset(
        a.arg
        for a, d in defaults
        if isinstance(d, ast.Constant) and d.value is None and a.arg not in passed
    )


def _instances(fn: FunctionNode, module: Module) -> dict[str, str]:
    """`loader = Loader(...)`, or a Django model's row `job = ImportTask.objects.get(...)`,
    in the function: the name's class, as a dotted name."""
    out: dict[str, str] = {}
    for node in module.nodes(fn):
        if isinstance(node, ast.For | ast.AsyncFor) and isinstance(node.target, ast.Name):
            model = _rows_of(node.iter)  # for addon in AddOn.objects.filter(...):
            name = module.qualify(model) if model is not None else None
            if name:
                out[node.target.id] = name
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            made = _row_of(node.value.func) or node.value.func
            name = module.qualify(made)
            last = (name or "").rsplit(".", 1)[-1]
            if name and last[:1].isupper():
                out[node.targets[0].id] = name
    return out


# Manager and queryset calls that return one row: an instance of the model.
ROW_CALLS = ("get", "create", "first", "last", "earliest", "latest")


# Queryset calls whose items are no rows of the model.
NOT_ROWS = ("values", "values_list", "aggregate", "count", "exists", "dates", "datetimes")


def _rows_of(iterated: ast.expr) -> ast.expr | None:
    """`Model.objects.filter(...)`, `Model.objects.all()` iterated: the `Model` expression."""
    node: ast.expr = iterated
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute):
            if node.attr in NOT_ROWS:
                return None
            if node.attr == "objects":
                return node.value
        node = node.func if isinstance(node, ast.Call) else node.value
    return None


def is_property(fn: FunctionNode) -> bool:
    """`@property`, `@cached_property` (functools' or Django's)."""
    return any(
        (d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")) in PROPERTIES
        for d in fn.decorator_list
    )


PROPERTIES = ("property", "cached_property")


def _row_of(func: ast.expr) -> ast.expr | None:
    """`Model.objects.get`, `Model.objects.filter(...).first`: the `Model` expression."""
    if not isinstance(func, ast.Attribute) or func.attr not in ROW_CALLS:
        return None
    node: ast.expr = func.value
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            return node.value
        node = node.func if isinstance(node, ast.Call) else node.value
    return None


def check_reach(
    files: list[FoundFile], base: str, limits: dict[tuple[str, str], Value] | None = None
) -> Reach:
    """client-timeout-missing for the calls Celery tasks reach with no timeout, and
    client-timeout-not-below-job for those whose timeout is not below the reaching task's
    time limit (`limits`: (file, task name) -> its limit, when known); one per call line."""
    names = Names(Project(files, base))
    tasks = find_tasks(names, files)
    walker = Walker(names)
    result = Reach(tasks=len(tasks), names={t.chain[0] for t in tasks})
    reported: set[tuple[str, str, int | None]] = set()
    functions: set[int] = set()
    for task in tasks:
        limit = (limits or {}).get((task.module.rel, task.chain[0]))
        for reached in walker.reach(task):
            functions.add(id(reached.fn))
            found = [_judge(task, reached, c, limit) for c in _calls(reached, names)]
            for made in [*found, *_sleeps(task, reached)]:
                where = (made.rule, made.location.path or "", made.location.line) if made else None
                if made is not None and where not in reported:
                    reported.add(where)  # type: ignore[arg-type]
                    result.findings.append(made)
    result.functions = len(functions)
    result.not_followed = len(names.not_followed)
    return result


def _calls(reached: Reached, names: Names) -> list[ClientCall]:
    """The client calls written in a reached function, less those through a session with a
    mounted adapter (the adapter may carry the timeout)."""
    held = instance_bindings(_methods(reached, names)) if reached.owner is not None else {}
    held = {**_imported_sessions(reached, names), **held}
    calls = client_calls_in(reached.fn, reached.module, held=held, unset=reached.unset)
    calls += handed_calls_in(reached.fn, reached.module, reached.handed)
    mounted = _mounted(reached)
    return [c for c in calls if c.call.rsplit(".", 1)[0] not in mounted]


def _imported_sessions(reached: Reached, names: Names) -> dict[str, ast.Call]:
    """Sessions the project makes once at module level and imports where it calls them:
    `session = requests.Session()` in common/session.py, `httpsub.post(url)` in a task
    module importing it (through a package's re-export) as `httpsub`. The constructor comes
    back named by its full dotted name, as the calling module would not know it."""
    module = reached.module
    out: dict[str, ast.Call] = {}
    for node in module.nodes(reached.fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        held = node.func.value
        if not isinstance(held, ast.Name) or held.id not in module.aliases or held.id in out:
            continue
        located = names.locate(module.aliases[held.id], module)
        if located is None or len(located[1]) != 1:
            continue
        where, (name,) = located
        made = where.constants.get(name)
        kind = where.qualify(made.func) if isinstance(made, ast.Call) else None
        if isinstance(made, ast.Call) and (kind in SESSIONS or kind in CLIENTS):
            named = ast.Call(ast.Name(kind, ast.Load()), made.args, made.keywords)
            out[held.id] = ast.copy_location(named, made)
    return out


def _methods(reached: Reached, names: Names) -> list[tuple[FunctionNode, Module]]:
    """Every method of the instance's class and of its project bases, with its module."""
    assert reached.owner is not None
    out: list[tuple[FunctionNode, Module]] = []
    for cls, module in names.lineage(reached.owner, reached.home or reached.module):
        out += [
            (f, module) for f in cls.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
    return out


def _sleeps(task: Reached, reached: Reached) -> list[Finding]:
    """sleep-loop in the task's body and the helpers of its own module it calls: the wait is
    the task's, a slot held doing nothing. A sleep further away (a client library's retry
    back-off in another module) is not the task's loop."""
    if reached.module is not task.module:
        return []
    path = " -> ".join(f"{name}()" for name in reached.chain)
    via = f" (in {path})" if len(reached.chain) > 1 else ""
    return [
        finding(
            "sleep-loop",
            f"Celery task '{task.chain[0]}' sleeps in a loop{via} (time.sleep at line "
            f"{node.lineno}): it holds a worker slot while waiting and runs toward its time "
            "limit, or a deploy's stop grace, doing nothing.",
            "end the task and send the rest as a new task with apply_async(countdown=N)",
            Source(task.module.rel, node.lineno),
        )
        for node in sleeps_in_loops(reached.fn, reached.module)
    ]


def _judge(
    task: Reached, reached: Reached, call: ClientCall, limit: Value | None
) -> Finding | None:
    if call.timeout.amount is None:
        return _finding(task, reached, call)
    if limit is None or limit.amount is None or call.timeout.source.path is None:
        return None  # no known limit, or the library's default: not the project's number
    if call.timeout.amount >= limit.amount:
        return _not_below(task, reached, call, limit)
    return None


def _mounted(reached: Reached) -> set[str]:
    """Sessions that get an adapter mounted (`s.mount("https://", Adapter(...))`,
    `self.session.mount(...)`) anywhere in the module: the adapter may carry the timeout."""
    return {
        ast.unparse(node.func.value)
        for node in reached.module.nodes()
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "mount"
        and isinstance(node.func.value, ast.Name | ast.Attribute)
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


def _not_below(task: Reached, reached: Reached, call: ClientCall, limit: Value) -> Finding:
    path = " -> ".join(f"{name}()" for name in reached.chain)
    via = f" through {path}" if len(reached.chain) > 1 else ""
    assert call.timeout.amount is not None and limit.amount is not None
    return finding(
        "client-timeout-not-below-job",
        f"Celery task '{task.chain[0]}' ({limit.label} {limit.amount:g} s) calls "
        f"{call.call}(){via} with a {call.timeout.amount:g} s timeout: the task can be "
        "stopped mid-call while the request still completes on the other side, and a retry "
        "repeats it.",
        f"pass timeout={suggest_timeout(limit.amount)} to {call.call}(...), below the task's "
        "time limit",
        Source(call.source.path, call.source.line),
        clocks=(call.timeout, limit),
    )

"""Python entry points and jobs, by framework: Django/DRF views, Flask routes, FastAPI
endpoints, Django management commands, Click/Typer commands, Django RunPython and Alembic
migrations, Celery tasks, tenure jobs, RQ jobs and Dramatiq actors."""

from __future__ import annotations

import ast
import os

from tenure.doctor.astutil import FunctionNode, Module
from tenure.doctor.budget.model import Code, Costly, Kind, Unit
from tenure.doctor.budget.python_body import Project, Reader, call_name, dotted, light_module
from tenure.doctor.walk import FoundFile

ROUTE_VERBS = {"route", "get", "post", "put", "patch", "delete", "api_route", "websocket"}
VIEW_METHODS = {"get", "post", "put", "patch", "delete", "list", "create", "retrieve",
                "update", "partial_update", "destroy", "perform_create", "perform_update",
                "perform_destroy", "form_valid", "get_context_data"}  # fmt: skip
VIEW_BASES = ("View", "ViewSet", "APIView")
TASK_DECORATORS = {"task", "shared_task", "job", "actor", "periodic_task", "db_task",
                   "db_periodic_task"}  # fmt: skip
MEMBER_SIGNATURES = {"s", "si", "signature", "sig"}
GROUPS = (b"group(", b"chord(", b"batch")
# Bytes a file holds when it may define an entry point or a job: the rest are not parsed.
MARKERS = (b"request,", b"request)", b"BaseCommand", b"RunPython", b"def upgrade", b"task",
           b"actor", b"@click", b".command(", b".route(", b"Router", b"router", b"Blueprint",
           b"@app.", b".job(", b"@job", b"dramatiq", b"enqueue", b"add_job",
           b"function=", b"Task)")  # fmt: skip


def parse_more(files: list[FoundFile], parsed: list[Module]) -> list[Module]:
    """`parsed` and the other files that may hold entry points (the tenure checks parse only
    the files that mention jobs)."""
    known = {m.path for m in parsed}
    modules = list(parsed)
    for found in files:
        if found.path in known or not any(m in found.data for m in MARKERS):
            continue
        module = light_module(found)
        if module is not None:
            modules.append(module)
    return modules


def _decorators(fn: FunctionNode) -> list[tuple[str, ast.expr]]:
    """(last name, the decorator's callee) for each decorator."""
    out = []
    for deco in fn.decorator_list:
        callee = deco.func if isinstance(deco, ast.Call) else deco
        name = callee.attr if isinstance(callee, ast.Attribute) else dotted(callee)
        out.append((name, callee))
    return out


def _kind_of_function(fn: FunctionNode, module: Module) -> tuple[Kind, str] | None:
    for name, callee in _decorators(fn):
        base = dotted(callee.value) if isinstance(callee, ast.Attribute) else ""
        qualified = module.qualify(callee) or ""
        if name in ROUTE_VERBS and base:
            framework = "FastAPI endpoint" if "router" in base or "fastapi" in str(
                module.aliases.values()) else "Flask route"  # fmt: skip
            return "request", framework
        if name == "action" and "admin" in base + qualified:
            return "request", "Django admin action"
        if name in ("api_view", "login_required", "require_POST", "require_http_methods",
                    "require_GET", "permission_required", "csrf_exempt"):  # fmt: skip
            return "request", "Django view"
        if name == "command" or qualified in ("click.command", "typer.command"):
            return "command", "Click/Typer command"
        if name in TASK_DECORATORS:
            kind = "tenure job" if name == "job" and "tenure" in qualified + base else "task"
            if name == "task" or name == "shared_task" or "celery" in qualified:
                kind = "Celery task"
            elif name.startswith("db_"):
                kind = "Huey task"  # huey.contrib.djhuey's db_task: closes the connection
            elif name == "actor":
                kind = "Dramatiq actor"
            elif name == "job" and kind != "tenure job":
                kind = "RQ job" if "rq" in qualified else "tenure job"
            return "job", kind
    args = fn.args.args
    if args and args[0].arg == "request" and "views" in module.rel.replace(os.sep, "/"):
        return "request", "Django view"
    return None


def _migration_functions(module: Module) -> list[tuple[FunctionNode, str]]:
    rel = module.rel.replace(os.sep, "/")
    out: list[tuple[FunctionNode, str]] = []
    if "/migrations/" in f"/{rel}":
        for node in module.nodes():
            if isinstance(node, ast.Call) and call_name(node) == "RunPython":
                given = node.args[:2] + [k.value for k in node.keywords
                                         if k.arg in ("code", "reverse_code")]  # fmt: skip
                for arg in given:
                    fn = module.functions.get(arg.id) if isinstance(arg, ast.Name) else None
                    if fn is not None:
                        out.append((fn, "Django RunPython"))
    if "revision" in module.constants and "upgrade" in module.functions:
        out += [(module.functions[n], "Alembic migration") for n in ("upgrade", "downgrade")
                if n in module.functions]  # fmt: skip
    return out


def _class_units(cls: ast.ClassDef, module: Module) -> list[tuple[FunctionNode, Kind, str]]:
    bases = [dotted(b) for b in cls.bases]
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if any(b.endswith("BaseCommand") for b in bases):
        return [(m, "command", "Django management command") for m in methods
                if m.name == "handle"]  # fmt: skip
    if any(b.rsplit(".", 1)[-1].endswith(VIEW_BASES) for b in bases):
        out: list[tuple[FunctionNode, Kind, str]] = []
        for m in methods:
            action = any(n == "action" for n, _ in _decorators(m))
            if m.name in VIEW_METHODS or action:
                out.append((m, "request", "Django view"))
        return out
    if any(b.rsplit(".", 1)[-1].endswith("Task") for b in bases):
        # a class-based Celery task (`class PruneAdmins(Task)`, a project's `BaseTask`):
        # its run() is the job's body
        return [(m, "job", "Celery task") for m in methods if m.name == "run"]
    return []


SCHEDULERS = ("enqueue", "job", "schedule", "queue")


def _handed_to_queues(module: Module) -> list[ast.expr]:
    """What a module hands to a queue: `queue.enqueue(refresh, ...)`,
    `scheduler.add_job(refresh)`, `job_scheduler(function=refresh, queue_name=...)` (RQ and
    the schedulers over it)."""
    out: list[ast.expr] = []
    for node in module.nodes():
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node).lower()
        if not any(word in name for word in SCHEDULERS):
            continue
        out += [k.value for k in node.keywords if k.arg in ("function", "func", "f")]
        if name.startswith("enqueue") or name == "add_job":
            out += node.args[:1]
    return out


def _queued_functions(module: Module, elsewhere: dict[str, set[str]]) -> set[str]:
    """Plain functions that run as jobs: handed to a queue in the same module, or imported
    and handed to one in another (`from x.tasks import refresh` ... `job_scheduler(
    function=refresh)` in signals.py); `elsewhere` maps a function's name to the modules it
    was imported from there."""
    out = {g.id for g in _handed_to_queues(module) if isinstance(g, ast.Name)}
    here = module.rel.replace(os.sep, "/").removesuffix(".py").replace("/", ".")
    for name in module.functions:
        if any(here == m or here.endswith("." + m) for m in elsewhere.get(name, ())):
            out.add(name)
    return out & set(module.functions)


def _queued_elsewhere(modules: list[Module]) -> dict[str, set[str]]:
    """Function name -> the modules it was imported from, wherever it is handed to a queue."""
    out: dict[str, set[str]] = {}
    for module in modules:
        for given in _handed_to_queues(module):
            qualified = module.qualify(given) or ""
            if "." in qualified:
                home, name = qualified.rsplit(".", 1)
                out.setdefault(name, set()).add(home)
    return out


def _members(modules: list[Module], sources: list[FoundFile]) -> set[str]:
    """Tasks that run as members of a group or chord: `group(t.s(x) for x in ...)`. Only
    files that mention one are walked."""
    unread = {f.path for f in sources if not any(w in f.data for w in GROUPS)}
    members: set[str] = set()
    for module in modules:
        if module.path in unread:
            continue
        for node in module.nodes():
            if isinstance(node, ast.Call) and call_name(node) == "batch_over_ids" and node.args:
                members.add(dotted(node.args[0]).rsplit(".", 1)[-1])
            if isinstance(node, ast.Call) and call_name(node) in ("group", "chord", "batch"):
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Attribute)
                        and sub.func.attr in MEMBER_SIGNATURES
                    ):
                        members.add(dotted(sub.func.value).rsplit(".", 1)[-1])
    return members


def read_python(modules: list[Module], sources: list[FoundFile] | None = None) -> Code:
    """`sources`: every Python file found, searched when a call leads into one not parsed."""
    project = Project(sources=sources or [])
    for module in modules:
        project.add(module)
    members = _members(modules, sources or [])
    elsewhere = _queued_elsewhere(modules)
    code = Code()
    for module in modules:
        found: list[tuple[FunctionNode, Kind, str, str]] = []
        for fn, framework in _migration_functions(module):
            found.append((fn, "migration", framework, fn.name))
        queued = _queued_functions(module, elsewhere)
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                kind = _kind_of_function(node, module)
                if kind is None and node.name in queued:
                    kind = ("job", "queued function")
                if kind is not None and not any(f[0] is node for f in found):
                    found.append((node, kind[0], kind[1], node.name))
            elif isinstance(node, ast.ClassDef):
                for fn, kind_, framework in _class_units(node, module):
                    found.append((fn, kind_, framework, f"{node.name}.{fn.name}"))
        for fn, kind_, framework, name in found:
            code.units.append(_unit(fn, kind_, framework, name, module, project, members))
    return code


def _unit(fn: FunctionNode, kind: Kind, framework: str, name: str, module: Module,
          project: Project, members: set[str]) -> Unit:  # fmt: skip
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    params -= {"self", "request", "cls", "apps", "schema_editor"}
    unit = Unit(kind, f"{module.rel}:{name}", framework, module.rel, fn.lineno)
    reader = Reader(module, project, params)
    reader.read(fn, unit)
    if unit.floods and any(
        isinstance(n, ast.keyword) and n.arg in ("queue", "countdown", "eta") for n in ast.walk(fn)
    ):
        unit.floods = []  # the batch has a queue of its own, or is spread out
    if kind == "job":
        unit.is_member = fn.name in members
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = dotted(node.func.value).rsplit(".", 1)[-1]
                if node.func.attr in ("delay", "apply_async", "dispatch") and target in (
                    fn.name, "self"):  # fmt: skip
                    unit.self_dispatch.append(_costly(node))
                    sent = _sent_values([*node.args, *(k.value for k in node.keywords)])
                    if any(_offset(reader.queries.get(a.id, a) if isinstance(a, ast.Name) else a,
                                   params) for a in sent):  # fmt: skip
                        unit.redispatch_offset.append(_costly(node))
    return unit


def _costly(call: ast.Call) -> Costly:
    return Costly("dispatch", dotted(call.func), call.lineno)


def _sent_values(sent: list[ast.expr]) -> list[ast.expr]:
    """What a dispatch hands the job, through `apply_async(args=[...], kwargs={...})`."""
    out: list[ast.expr] = []
    for value in sent:
        if isinstance(value, ast.List | ast.Tuple):
            out += value.elts
        elif isinstance(value, ast.Dict):
            out += value.values
        else:
            out.append(value)
    return out


def _offset(arg: ast.expr, params: set[str]) -> bool:
    """`offset + 100` (written in the call, or held in a local first: `nxt = start + size`),
    or the last row's key (`last_pk=orders[-1].pk`): the job sends itself on from where it
    stopped."""
    if isinstance(arg, ast.Attribute) and arg.attr in ("pk", "id"):
        last = arg.value
        return isinstance(last, ast.Subscript) and ast.unparse(last.slice) == "-1"
    return (
        isinstance(arg, ast.BinOp)
        and isinstance(arg.op, ast.Add)
        and any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(arg))
    )

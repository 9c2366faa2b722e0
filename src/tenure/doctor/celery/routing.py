"""Which tasks reach a worker bound to named queues (`celery worker -Q a,b`).

A task lands on a queue by, in Celery's order, the `queue=` it is sent with
(`apply_async(queue=...)`, `send_task(name, queue=...)`), `task_routes`, the `queue=` on its
decorator, and otherwise `task_default_queue` ("celery"). A worker reading named queues runs
only the tasks that can reach one of them; judging it on every task of the project made one
warning per queue-bound worker out of a task it never sees.

Queues and task names written as constants of a class elsewhere in the project
(`queue=Queues.HEAVY`, `@shared_task(name=Tasks.FETCH)` then `send_task(Tasks.FETCH, ...)`) are
followed: the class's string attribute is the queue, and the same expression on both sides is
the same task. A task whose queue cannot be decided (a variable, a router function) is not
charged to a queue-bound worker; the worker's notes say that routing was not followed.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from typing import Any

from tenure.doctor.celery.settings import CeleryConfig, Setting, TaskDef
from tenure.doctor.model import Skipped
from tenure.doctor.walk import Tree

UNDECIDED = None  # a task whose queues cannot be read


def read_beat_entry(config: CeleryConfig, node: ast.Dict) -> None:
    """A beat schedule entry, `{"task": NAME, "options": {"queue": Q}}`: beat sends NAME to Q."""
    entry = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
             if isinstance(k, ast.Constant) and isinstance(k.value, str)}  # fmt: skip
    task, options = entry.get("task"), entry.get("options")
    if task is None or "schedule" not in entry:
        return
    name = _task_name(task)
    queue = None
    if isinstance(options, ast.Dict):
        queue = next((v for k, v in zip(options.keys, options.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "queue"), None)  # fmt: skip
    config.sent_queues.setdefault(name, []).append(ast.unparse(queue) if queue else None)


DEFAULT_QUEUE_NAMES = {"task_default_queue", "CELERY_TASK_DEFAULT_QUEUE", "CELERY_DEFAULT_QUEUE"}


def read_default_queue(config: CeleryConfig, node: ast.AST) -> None:
    """`conf.update(task_default_queue="default")` or `CELERY_TASK_DEFAULT_QUEUE = "default"` in
    a module other than the settings read: where unrouted tasks go."""
    value = None
    if (isinstance(node, ast.keyword) and node.arg in DEFAULT_QUEUE_NAMES) or (
        isinstance(node, ast.Assign)
        and any(
            getattr(t, "id", getattr(t, "attr", None)) in DEFAULT_QUEUE_NAMES for t in node.targets
        )
    ):
        value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        config.default_queues.add(value.value)


def _task_name(node: ast.expr) -> str:
    """A task named by a string (its last dotted part) or by an expression (its source)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rsplit(".", 1)[-1]
    return ast.unparse(node)


def read_sent_queue(config: CeleryConfig, node: ast.Call, rel: str) -> None:
    """`x.apply_async(..., queue=Q)` and `app.send_task(NAME, ..., queue=Q)`: the queue (or the
    unresolved expression) the task named so is sent to."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("send_task", "apply_async"):
        return
    queue = next((k.value for k in node.keywords if k.arg == "queue"), None)
    if func.attr == "send_task":
        if not node.args:
            return
        name = _task_name(node.args[0])
    else:
        name = ast.unparse(func.value).rsplit(".", 1)[-1]
    config.sent_queues.setdefault(name, []).append(
        ast.unparse(queue) if queue is not None else None
    )


def resolve(config: CeleryConfig, tree: Tree) -> None:
    """Class constants the routing names (`Queues.HEAVY`), looked up once in the project."""
    wanted = {
        expr.split(".")[-2]
        for sent in config.sent_queues.values()
        for expr in sent
        if expr and _DOTTED.fullmatch(expr)
    }
    for task in config.tasks:
        queue = task.options.get("queue")
        if queue is not None and not queue.known and "queue_expr" in task.options:
            expr = str(task.options["queue_expr"].value)
            if _DOTTED.fullmatch(expr):
                wanted.add(expr.split(".")[-2])
    if not wanted:
        return
    for found in tree.files["python"]:
        if not any(b"class " + w.encode() in found.data for w in wanted):
            continue
        try:
            module = ast.parse(found.data)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef) and node.name in wanted:
                for item in node.body:
                    if (
                        isinstance(item, ast.Assign | ast.AnnAssign)
                        and isinstance(item.value, ast.Constant)
                        and isinstance(item.value.value, str)
                    ):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        for target in targets:
                            if isinstance(target, ast.Name):
                                key = f"{node.name}.{target.id}"
                                config.class_constants.setdefault(key, item.value.value)


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def _constant(config: CeleryConfig, expr: str) -> str | None:
    parts = expr.split(".")
    return config.class_constants.get(".".join(parts[-2:])) if len(parts) >= 2 else None


def served(config: CeleryConfig, w: Any) -> tuple[list[TaskDef], int]:
    """The tasks a worker runs, and how many tasks' queues could not be decided. A worker
    that names no queues (-Q) runs them all."""
    queues = {q.strip() for q in w.options.get("queues", "").split(",") if q.strip()}
    if not queues or any("$" in q for q in queues):
        return config.tasks, 0
    out: list[TaskDef] = []
    undecided: list[TaskDef] = []
    for task in config.tasks:
        reach = queues_of(config, task)
        if reach is UNDECIDED:
            undecided.append(task)
        elif reach & queues:
            out.append(task)
    if not out and undecided:
        # No task is seen to reach these queues but some could not be followed: they may.
        config.skipped.append(Skipped(str(w.source), (
            f"Celery worker {w.name} reads queues {w.options['queues']}: no task is seen to "
            f"reach them, {len(undecided)} tasks' routing was not followed (a variable, a "
            "router): the worker is judged on those")))  # fmt: skip
        return undecided, len(undecided)
    return out, len(undecided)


def queues_of(config: CeleryConfig, task: TaskDef) -> set[str] | None:
    """Every queue the task can be put on (the union of its sends), None when one of them
    cannot be read."""
    own = task.options.get("name")
    names = [task.name]
    if own is not None and isinstance(own.value, str):
        names.append(own.value.rsplit(".", 1)[-1])
    if "name_expr" in task.options:
        names.append(str(task.options["name_expr"].value))
    sends = [q for n in dict.fromkeys(names) for q in config.sent_queues.get(n, [])]
    found: set[str] = set()
    for expr in sends:
        if expr is None:
            continue  # sent without a queue: the route below
        value = _literal(expr) or _constant(config, expr)
        if value is None:
            return UNDECIDED
        found.add(value)
    if sends and all(s is not None for s in sends):
        return found
    routed = _routed(config, task, names)
    if routed is UNDECIDED:
        return UNDECIDED
    return found | routed


def _routed(config: CeleryConfig, task: TaskDef, names: list[str]) -> set[str] | None:
    """task_routes (a mapping by name or glob), then the decorator's queue, then the default."""
    routes = config.settings.get("task_routes")
    if routes is not None:
        value = routes.value
        if not isinstance(value, dict):
            return UNDECIDED  # a router function, a list of them, or unresolved
        full = _full_names(task, names)
        for pattern, route in value.items():
            if isinstance(pattern, str) and any(fnmatch.fnmatchcase(n, pattern) for n in full):
                queue = route.get("queue") if isinstance(route, dict) else route
                return {queue} if isinstance(queue, str) else UNDECIDED
    queue = task.options.get("queue")
    if queue is not None:
        if isinstance(queue.value, str):
            return {queue.value}
        expr = task.options.get("queue_expr")
        value = _constant(config, str(expr.value)) if expr is not None else None
        return {value} if value is not None else UNDECIDED
    default = config.settings.get("task_default_queue")
    if default is not None and not isinstance(default.value, str):
        return UNDECIDED
    if default is None and config.default_queues:
        return set(config.default_queues)
    return {default.value if default is not None else "celery"}


def _full_names(task: TaskDef, names: list[str]) -> list[str]:
    own: Setting | None = task.options.get("name")
    full = list(names)
    if own is not None and isinstance(own.value, str):
        full.append(own.value)
    # `proj.tasks.*` names the module from the package root, which the path may sit under.
    parts = (task.source.path or "").removesuffix(".py").split("/")
    full += [".".join([*parts[i:], task.name]) for i in range(len(parts))]
    return full


def _literal(expr: str) -> str | None:
    try:
        value = ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None

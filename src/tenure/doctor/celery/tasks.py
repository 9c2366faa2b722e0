"""A Celery project's tasks and the options each runs with: decorated functions
(`@app.task(time_limit=...)`, bare `@shared_task`), class-based tasks (`class Export(Task):
time_limit = 600`), a decorator's `base=` class, and `task_annotations` (by task name, or `*`
for every task). An option a task sets itself wins over its base class and the annotations,
as in Celery."""

from __future__ import annotations

import ast

from tenure.doctor.celery.floors import floor, local_assignments
from tenure.doctor.celery.routing import read_beat_entry, read_default_queue, read_sent_queue
from tenure.doctor.celery.settings import CeleryConfig, Setting, TaskDef, _callee, _setting
from tenure.doctor.celery.values import UNKNOWN
from tenure.doctor.model import Source, Value

OPTIONS = ("time_limit", "soft_time_limit", "acks_late", "queue", "reject_on_worker_lost")


LIMITS = ("time_limit", "soft_time_limit")


def read_tasks(config: CeleryConfig, tree: ast.AST, rel: str) -> None:
    local: dict[int, dict[str, ast.expr]] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if local is None and _sends(node):
                local = local_assignments(tree)  # read once, for a module that sends tasks
            _call_limits(config, node, rel, (local or {}).get(id(node), {}))
            read_sent_queue(config, node, rel)
        elif isinstance(node, ast.Dict):
            read_beat_entry(config, node)
        elif isinstance(node, ast.keyword | ast.Assign):
            read_default_queue(config, node)
        if isinstance(node, ast.ClassDef) and any(_is_task_base(b) for b in node.bases):
            options = {
                target.id: _setting(item.value, rel, config.scope)
                for item in node.body
                if isinstance(item, ast.Assign)
                for target in item.targets
                if isinstance(target, ast.Name) and target.id in (*OPTIONS, "name", "abstract")
            }
            bases = [_dotted(b) for b in node.bases]
            options["base"] = Setting(bases[0], Source(rel, node.lineno))
            config.tasks.append(TaskDef(node.name, Source(rel, node.lineno), options, True))
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and _callee(decorator).endswith("task"):
                options = {}
                for k in decorator.keywords:
                    if k.arg == "base":
                        options["base"] = Setting(_dotted(k.value), Source(rel, node.lineno))
                    elif k.arg:
                        options[k.arg] = _setting(k.value, rel, config.scope)
                        if k.arg in ("queue", "name") and not options[k.arg].known:
                            # `queue=Queues.HEAVY`: routing.resolve reads the class constant.
                            source = Source(rel, k.value.lineno)
                            options[f"{k.arg}_expr"] = Setting(ast.unparse(k.value), source)
                config.tasks.append(TaskDef(node.name, Source(rel, decorator.lineno), options))
            elif _bare_task(decorator):  # @shared_task, @app.task: the defaults
                config.tasks.append(TaskDef(node.name, Source(rel, decorator.lineno)))


def _sends(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr in ("send_task", "apply_async")


def _call_limits(
    config: CeleryConfig, node: ast.Call, rel: str, names: dict[str, ast.expr]
) -> None:
    """`app.send_task("compute_worker_run", soft_time_limit=t)` and `run.apply_async(...,
    time_limit=t)`: the limit the task runs with when sent so, a value, the least it can be
    (`t = phase.limit + 1200` in the sending function), or UNKNOWN."""
    func = node.func
    if not _sends(node):
        return
    assert isinstance(func, ast.Attribute)
    if func.attr == "send_task":
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return
        name = first.value.rsplit(".", 1)[-1]
    else:
        name = _dotted(func.value).rsplit(".", 1)[-1]
    for k in node.keywords:
        if k.arg in LIMITS and name:
            by_key = config.call_limits.setdefault(name, {})
            sent = _setting(k.value, rel, config.scope)
            least = floor(k.value, names, config.scope) if not sent.known else 0.0
            if least > 0:
                note = f"at least {least:g} s: {ast.unparse(k.value)}"
                if isinstance(k.value, ast.Name) and k.value.id in names:
                    note += f" = {ast.unparse(names[k.value.id])}"
                sent = Setting(least, Source(sent.source.path, sent.source.line, note))
            by_key.setdefault(k.arg, []).append(sent)


def settle(config: CeleryConfig) -> None:
    """Each task's options from its base class (a class-based task read anywhere in the
    project), then from task_annotations; what the task sets itself is kept. A class that is
    another task's base, or abstract, runs nothing itself and is dropped."""
    classes = {t.name: t for t in config.tasks if t.is_class}
    bases = {
        b.value.rsplit(".", 1)[-1]
        for t in config.tasks
        for b in [t.options.get("base")]
        if b is not None and isinstance(b.value, str)
    }
    config.tasks[:] = [
        t
        for t in config.tasks
        if not t.is_class
        or (
            t.name not in bases
            and t.options.get("abstract", Setting(None, Source())).value is not True
        )
    ]
    for task in config.tasks:
        seen: set[str] = set()
        base = task.options.get("base")
        while base is not None and isinstance(base.value, str) and base.value not in seen:
            seen.add(base.value)
            parent = classes.get(base.value.rsplit(".", 1)[-1])
            if parent is None or parent is task:
                break
            for key in OPTIONS:
                if key in parent.options and key not in task.options:
                    task.options[key] = parent.options[key]
            base = parent.options.get("base")
    for task in config.tasks:
        own = task.options.get("name")
        for name in {task.name, own.value.rsplit(".", 1)[-1] if own and isinstance(own.value, str)
                     else task.name}:  # fmt: skip
            for key, sent in config.call_limits.get(name, {}).items():
                if key not in task.options:
                    # Sent with a limit it cannot know (an expression): unknown, not "none".
                    known = [s for s in sent if s.known and isinstance(s.value, int | float)]
                    task.options[key] = max(known, key=lambda s: s.value) if len(known) == len(
                        sent) else Setting(UNKNOWN, sent[0].source)  # fmt: skip
    annotations = config.settings.get("task_annotations")
    value = annotations.value if annotations is not None else None
    for mapping in value if isinstance(value, list | tuple) else [value]:
        if not isinstance(mapping, dict):
            continue
        for name, options in mapping.items():
            if not isinstance(options, dict) or not isinstance(name, str):
                continue
            for task in config.tasks:
                own = task.options.get("name")
                names = {task.name, own.value if own is not None else None}
                if name == "*" or name.rsplit(".", 1)[-1] in names or name in names:
                    for key in OPTIONS:
                        if key in options and key not in task.options:
                            assert annotations is not None
                            task.options[key] = Setting(options[key], annotations.source)


def _is_task_base(node: ast.expr) -> bool:
    """`Task`, `celery.Task`, `app.Task`, `BaseTask`: a base class named for a task."""
    return _dotted(node).rsplit(".", 1)[-1].endswith("Task")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return getattr(node, "id", "")


def _bare_task(decorator: ast.expr) -> bool:
    if isinstance(decorator, ast.Name):
        return decorator.id in ("shared_task", "task")
    return isinstance(decorator, ast.Attribute) and decorator.attr == "task"


def task_limits(config: CeleryConfig) -> dict[tuple[str, str], Value]:
    """(file, task name) -> the first time limit that stops the task: the smallest known of
    its time_limit/soft_time_limit, each the task's own (after settle) else the app's
    task_time_limit/task_soft_time_limit. A limit the doctor cannot resolve is left out: a
    call at or past a known one is past the smallest one too."""
    out: dict[tuple[str, str], Value] = {}
    for task in config.tasks:
        known: list[Value] = []
        for key in LIMITS:
            setting = task.options.get(key) or config.settings.get(f"task_{key}")
            if setting is not None and setting.known and isinstance(setting.value, int | float):
                label = key if key in task.options else f"task_{key}"
                known.append(Value(label, float(setting.value), "s", setting.source))
        if task.source.path and known:
            out[(task.source.path, task.name)] = min(known, key=lambda v: v.amount or 0.0)
    return out

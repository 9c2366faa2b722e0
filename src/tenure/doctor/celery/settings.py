"""A Celery app's settings, each with where it was set: from the imported app (`MODULE:ATTR`),
or from the source of a file (`PATH`) without running it.

The AST reader understands `Celery(..., broker=...)`, `app.conf.update(...)`,
`app.conf.key = ...`, `app.config_from_object` targets written as module-level settings
(`task_acks_late = True`), the old upper-case names (`CELERY_ACKS_LATE`) and Django's
`CELERY_` namespace. Values that are not literals (`os.environ[...]`) are unknown, not guessed.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from tenure.doctor.celery.growth import growing_delays
from tenure.doctor.celery.values import (
    UNKNOWN,
    Scope,
    collect_constants,
    env_scheme,
    evaluate,
    read_env_files,
)
from tenure.doctor.model import Skipped, Source

KEYS = (
    "broker_url",
    "broker_transport_options",
    "task_acks_late",
    "task_reject_on_worker_lost",
    "task_time_limit",
    "task_soft_time_limit",
    "worker_prefetch_multiplier",
    "worker_max_memory_per_child",
    "worker_concurrency",
    "accept_content",
    "task_serializer",
    "result_serializer",
    "result_accept_content",
    "task_annotations",
    "task_routes",
    "task_default_queue",
)
OLD_NAMES = {
    "BROKER_URL": "broker_url",
    "BROKER_TRANSPORT_OPTIONS": "broker_transport_options",
    "CELERY_ACKS_LATE": "task_acks_late",
    "CELERY_REJECT_ON_WORKER_LOST": "task_reject_on_worker_lost",
    "CELERYD_TASK_TIME_LIMIT": "task_time_limit",
    "CELERYD_TASK_SOFT_TIME_LIMIT": "task_soft_time_limit",
    "CELERYD_PREFETCH_MULTIPLIER": "worker_prefetch_multiplier",
    "CELERYD_MAX_MEMORY_PER_CHILD": "worker_max_memory_per_child",
    "CELERYD_CONCURRENCY": "worker_concurrency",
    "CELERY_ACCEPT_CONTENT": "accept_content",
    "CELERY_TASK_SERIALIZER": "task_serializer",
    "CELERY_RESULT_SERIALIZER": "result_serializer",
    "CELERY_ANNOTATIONS": "task_annotations",
    "CELERY_ROUTES": "task_routes",
    "CELERY_DEFAULT_QUEUE": "task_default_queue",
}
# Flask's documented layout: the Celery settings as one mapping in the app's config,
# `CELERY = dict(broker_url=...)`, `app.config.from_mapping(CELERY={...})`.
MAPPING_NAMES = ("CELERY", "CELERY_CONFIG")
CELERY_KWARGS = {"broker": "broker_url"}


@dataclass
class Setting:
    value: Any  # UNKNOWN when written but not resolvable
    source: Source

    @property
    def known(self) -> bool:
        return self.value is not UNKNOWN


@dataclass
class TaskDef:
    name: str
    source: Source
    options: dict[str, Setting] = field(default_factory=dict)  # acks_late, time_limit...
    is_class: bool = False  # a class-based task (`class Export(Task)`)


@dataclass
class Delay:
    """An apply_async/retry with countdown= or eta=, and the delay in seconds when literal."""

    call: str
    seconds: float | None
    source: Source
    grows: str = ""  # the product that grows with a loop's index (`index * delay`), no cap


@dataclass
class CeleryConfig:
    spec: str
    path: str | None  # the file the settings were read from
    settings: dict[str, Setting] = field(default_factory=dict)
    tasks: list[TaskDef] = field(default_factory=list)
    delays: list[Delay] = field(default_factory=list)
    # Limits given where a task is sent (`send_task("run", soft_time_limit=t)`): name -> key -> all
    call_limits: dict[str, dict[str, list[Setting]]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    # The queues each task is sent to (`send_task(NAME, queue=Q)`): name -> Q's source text,
    # None for a send without queue=; and the class constants they name (`Queues.HEAVY`).
    sent_queues: dict[str, list[str | None]] = field(default_factory=dict)
    class_constants: dict[str, str] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)  # setting -> its source text
    # task_default_queue written anywhere in the project (an app module's conf.update)
    default_queues: set[str] = field(default_factory=set)
    # What non-literal values are evaluated with: names bound earlier in the module being
    # read and the project's .env files (`60 * 60`, `env("LIMIT", 600)` are values).
    scope: Scope = field(default_factory=Scope)


class CannotLoad(Exception):
    """--celery names nothing the doctor can read."""


def load(spec: str, base: str) -> CeleryConfig:
    """`spec`: a path to a .py file, or MODULE[:ATTR] imported from the current directory."""
    if spec.endswith(".py") or os.sep in spec or os.path.isfile(spec):
        if not os.path.isfile(spec):
            raise CannotLoad(f"--celery {spec}: no such file")
        config = CeleryConfig(spec, os.path.abspath(spec))
        config.scope.env, config.scope.env_files = read_env_files(base)
        django = _django_settings(os.path.abspath(spec), base)
        if django is not None:  # read first: what the app module sets on app.conf wins
            read_source(config, django, base)
        read_source(config, os.path.abspath(spec), base)
        return config
    return _import(spec, base)


def _import(spec: str, base: str) -> CeleryConfig:
    module_name, _, attr = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise CannotLoad(f"--celery {spec}: importing {module_name!r} raised {exc!r}") from exc
    app = getattr(module, attr or "app", None) or getattr(module, "celery", None)
    conf = getattr(app, "conf", None)
    if conf is None or not hasattr(conf, "get"):
        raise CannotLoad(f"--celery {spec}: {module_name}.{attr or 'app'} is not a Celery app")
    path = getattr(module, "__file__", None)
    config = CeleryConfig(spec, os.path.abspath(path) if path else None)
    if config.path:
        read_source(config, config.path, base)  # for the lines, tasks and delays
    rel = os.path.relpath(config.path, base) if config.path else None
    for key in KEYS:
        written = config.settings.get(key)
        value = conf.get(key)
        if written is None or not written.known or written.value != value:
            where = written.source if written else Source(rel, None, f"app.conf['{key}']")
            config.settings[key] = Setting(value, where)
    return config


_DJANGO_MODULE = re.compile(
    r"""os\.environ\.setdefault\(\s*["']DJANGO_SETTINGS_MODULE["']\s*,\s*["']([\w.]+)["']"""
)


def _django_settings(path: str, base: str) -> str | None:
    """The Celery app module of a Django project (`os.environ.setdefault(
    "DJANGO_SETTINGS_MODULE", "onadata.settings.common")` and
    `app.config_from_object("django.conf:settings", namespace="CELERY")`): the settings module
    it loads, as a project file, so its CELERY_ names and `settings.NAME` are read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    match = _DJANGO_MODULE.search(text)
    if match is None or "django.conf:settings" not in text:
        return None
    parts = match.group(1).split(".")
    folder = os.path.dirname(path)
    roots = [base]
    while folder.startswith(base) and folder not in roots:
        roots.append(folder)
        folder = os.path.dirname(folder)
    for root in roots:
        candidate = os.path.join(root, *parts)
        for name in (candidate + ".py", os.path.join(candidate, "__init__.py")):
            if os.path.isfile(name) and os.path.realpath(name) != os.path.realpath(path):
                return name
    return None


def read_source(config: CeleryConfig, path: str, base: str, seen: tuple[str, ...] = ()) -> None:
    rel = os.path.relpath(path, base)
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        config.skipped.append(Skipped(rel, f"cannot parse: {exc}"))
        return
    if len(seen) < 5:
        # Django's split settings, `from config.settings.common import *` at the top of
        # docker.py: the common module's settings hold unless this one sets them again.
        for parent in _star_imports(tree, path, base):
            if parent not in seen and os.path.realpath(parent) != os.path.realpath(path):
                read_source(config, parent, base, (*seen, path))
    read_tree(config, tree, rel, settings=True, base=base)


def _star_imports(tree: ast.Module, path: str, base: str) -> list[str]:
    """The project files a module star-imports at its top level."""
    return [
        found
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and [a.name for a in node.names] == ["*"]
        for found in _module_file(node, path, base)
    ]


def imported_constants(tree: ast.AST, path: str, base: str, scope: Scope) -> dict[str, Any]:
    """Upper-case names a module takes by name from a project module at its top level
    (`from src.config import HDX_HARD_TASK_LIMIT as LIMIT`), as that module defines them; a
    name bound to an environment default stays marked as one."""
    out: dict[str, Any] = {}
    for node in getattr(tree, "body", []):
        if not isinstance(node, ast.ImportFrom) or any(a.name == "*" for a in node.names):
            continue
        wanted = [a for a in node.names if a.name.isupper()]
        files = _module_file(node, path, base) if wanted else []
        if not files:
            continue
        constants, defaulted = _module_constants(files[0], scope)
        for alias in wanted:
            if alias.name in constants:
                out[alias.asname or alias.name] = constants[alias.name]
                if alias.name in defaulted:
                    scope.defaulted[alias.asname or alias.name] = defaulted[alias.name]
    return out


def _module_constants(path: str, scope: Scope) -> tuple[dict[str, Any], dict[str, str]]:
    if path not in scope.modules:
        scope.modules[path] = ({}, {})  # also while it is read: an import cycle reads nothing
        try:
            with open(path, "rb") as handle:
                tree = ast.parse(handle.read(), filename=path)
        except (OSError, SyntaxError, ValueError, RecursionError):
            return scope.modules[path]
        inner = Scope(env=scope.env, env_files=scope.env_files, scheme=env_scheme(tree))
        scope.modules[path] = (collect_constants(tree, inner), inner.defaulted)
    return scope.modules[path]


def _module_file(node: ast.ImportFrom, path: str, base: str) -> list[str]:
    """The project file `from MODULE import ...` reads, if it is one."""
    parts = (node.module or "").split(".") if node.module else []
    if not parts:
        return []
    if node.level:
        folder = os.path.dirname(path)
        for _ in range(node.level - 1):
            folder = os.path.dirname(folder)
        roots = [folder]
    else:
        roots = [base, os.path.dirname(path)]
    for root in roots:
        candidate = os.path.join(root, *parts)
        for name in (candidate + ".py", os.path.join(candidate, "__init__.py")):
            if os.path.isfile(name):
                return [name]
    return []


def read_tree(
    config: CeleryConfig, tree: ast.AST, rel: str, *, settings: bool, base: str | None = None
) -> None:
    """Settings (when `settings`) and countdown/eta calls in one module; its tasks are
    tenure.doctor.celery.tasks' to read."""
    config.scope.scheme.update(env_scheme(tree))
    config.scope.imported = (
        imported_constants(tree, os.path.join(base, rel), base, config.scope) if base else {}
    )
    config.scope.constants = collect_constants(tree, config.scope)
    if settings:  # the settings files: task modules read their names as settings.NAME
        config.scope.settings = {**config.scope.settings, **config.scope.constants}
    grows = growing_delays(tree)
    for node in ast.walk(tree):
        if settings and isinstance(node, ast.Assign | ast.AnnAssign):
            _assignment(config, node, rel)
        elif isinstance(node, ast.Call):
            _call(config, node, rel, settings=settings, grows=grows)


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _setting(node: ast.AST, rel: str, scope: Scope | None = None) -> Setting:
    """A setting's value; when it is the default of an environment read no .env file sets,
    its source says so: the deployment may set another."""
    scope = scope or Scope()
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        before = len(scope.defaults)
        value = evaluate(node, scope)
        keys = list(dict.fromkeys(scope.defaults[before:]))
        del scope.defaults[before:]
        if keys and value is not UNKNOWN:
            files = f"not set in {scope.env_files}" if scope.env_files else "no .env file"
            note = f"the default of {', '.join(keys)}, {files}"
            return Setting(value, Source(rel, getattr(node, "lineno", None), note))
    return Setting(value, Source(rel, getattr(node, "lineno", None)))


def _put(config: CeleryConfig, key: str, node: ast.AST, rel: str) -> None:
    name = OLD_NAMES.get(key) or OLD_NAMES.get(key.removeprefix("CELERY_")) or key.lower()
    if name not in KEYS and key.startswith("CELERY_"):
        name = key.removeprefix("CELERY_").lower()  # Django: namespace='CELERY'
    if name in KEYS:
        config.settings[name] = _setting(node, rel, config.scope)
        if not config.settings[name].known:  # what it is built from, for the transport's name
            config.unresolved[name] = ast.unparse(node)


def _assignment(config: CeleryConfig, node: ast.Assign | ast.AnnAssign, rel: str) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is None:
        return
    for target in targets:
        key = target.slice if isinstance(target, ast.Subscript) else None
        if (getattr(target, "id", None) in MAPPING_NAMES
                or (isinstance(key, ast.Constant) and key.value in MAPPING_NAMES)):  # fmt: skip
            _mapping(config, node.value, rel)
        elif isinstance(target, ast.Name):
            if target.id in KEYS or target.id.isupper():
                _put(config, target.id, node.value, rel)
        elif isinstance(target, ast.Attribute) and _is_conf(target.value):
            _put(config, target.attr, node.value, rel)
        elif isinstance(target, ast.Subscript) and _is_conf(target.value):
            key = target.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                _put(config, key.value, node.value, rel)


def _mapping(config: CeleryConfig, node: ast.AST, rel: str) -> None:
    """`{"broker_url": ...}` or `dict(broker_url=...)`: each key a setting."""
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                _put(config, key.value, value, rel)
    elif isinstance(node, ast.Call) and _callee(node) == "dict":
        for keyword in node.keywords:
            if keyword.arg:
                _put(config, keyword.arg, keyword.value, rel)


def read_app_overrides(config: CeleryConfig, tree: ast.AST, rel: str) -> None:
    """The Celery app module next to the settings (`app.config_from_object(...)` then
    `app.conf.update(task_time_limit=...)` or `app.conf.task_time_limit = ...`): what it sets
    on app.conf wins over the settings object, whichever line comes first."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node) == "update":
            func = node.func
            if isinstance(func, ast.Attribute) and _is_conf(func.value):
                for keyword in node.keywords:
                    if keyword.arg:
                        _put(config, keyword.arg, keyword.value, rel)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and _is_conf(target.value):
                _put(config, target.attr, node.value, rel)


def _is_conf(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "conf"


def _call(
    config: CeleryConfig, node: ast.Call, rel: str, *, settings: bool, grows: dict[int, str]
) -> None:
    callee = _callee(node)
    if settings and callee in ("from_mapping", "update"):
        for keyword in node.keywords:
            if keyword.arg in MAPPING_NAMES:
                _mapping(config, keyword.value, rel)
    if settings and callee == "config_from_object" and node.args:
        _mapping(config, node.args[0], rel)  # config_from_object({"task_default_queue": ...})
    if settings and callee == "Celery":
        for keyword in node.keywords:
            if keyword.arg in CELERY_KWARGS:
                _put(config, CELERY_KWARGS[keyword.arg], keyword.value, rel)
    elif (
        settings
        and callee == "update"
        and isinstance(node.func, ast.Attribute)
        and _is_conf(node.func.value)
    ):
        for keyword in node.keywords:
            if keyword.arg:
                _put(config, keyword.arg, keyword.value, rel)
        for arg in node.args:
            if isinstance(arg, ast.Dict):
                for key, value in zip(arg.keys, arg.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        _put(config, key.value, value, rel)
    if callee in ("apply_async", "retry", "signature", "s", "set"):
        for keyword in node.keywords:
            if keyword.arg in ("countdown", "eta"):
                config.delays.append(
                    Delay(
                        f"{callee}({keyword.arg}=...)",
                        _delay_seconds(keyword.value, config.scope),
                        Source(rel, node.lineno),
                        grows.get(id(keyword.value), ""),
                    )
                )


def _delay_seconds(node: ast.AST, scope: Scope | None = None) -> float | None:
    """A number of seconds: literal, a module constant or `settings.NAME`, timedelta(...),
    now() + timedelta(...), or a backoff scaled by the retry count."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        # The whole sum when it is known (LOCKOUT_TIME + 60), else the part that is (now() + d)
        whole = _setting(node, "", scope).value
        if isinstance(whole, int | float) and not isinstance(whole, bool):
            return float(whole)
        return _delay_seconds(node.right, scope) or _delay_seconds(node.left, scope)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        backoff = _retry_backoff(node, scope)
        if backoff is not None:
            return backoff
    if isinstance(node, ast.Call) and _callee(node) == "timedelta":
        scale = {"weeks": 604800, "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
        total = 0.0
        for keyword in node.keywords:
            value = _setting(keyword.value, "", scope).value
            if keyword.arg not in scale or not isinstance(value, int | float):
                return None
            total += value * scale[keyword.arg]
        return total
    value = _setting(node, "", scope).value
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _retry_backoff(node: ast.BinOp, scope: Scope | None) -> float | None:
    """`countdown=60 * self.request.retries`: 0 s on the first retry, the factor on the
    second (max_retries defaults to 3), and more after; the factor is what the broker sees."""
    for factor, count in ((node.left, node.right), (node.right, node.left)):
        if isinstance(count, ast.Attribute) and count.attr == "retries":
            seconds = _delay_seconds(factor, scope)
            if seconds:
                return seconds
    return None

"""Settings values that are not literals but can still be known: arithmetic (`60 * 60`), names
bound earlier (`CELERY_SOFT_TIME_LIMIT + 60`), and environment reads with a default
(`env("CELERY_TASK_SOFT_TIME_LIMIT", None)`, `int(os.getenv("LIMIT", 600))`), resolved from the
project's own .env files or else their default. Anything else is UNKNOWN, never a guess."""

from __future__ import annotations

import ast
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenure.doctor.walk import is_development_name, read_dotenv

UNKNOWN: Any = object()
ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}
# env("K", d), env.int("K", d), os.getenv("K", d), os.environ.get("K", d), config("K", default=d)
ENV_READERS = {"env", "getenv", "get", "config", "int", "str", "bool", "float"}
CASTS: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "str": str}


@dataclass
class Scope:
    constants: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the project's .env files, merged
    env_files: str = ""  # their names, for notes
    # The settings file's own names, for `settings.CELERY_SOFT_TIME_LIMIT` in task modules.
    settings: dict[str, Any] = field(default_factory=dict)


def read_env_files(folder: str) -> tuple[dict[str, str], str]:
    """`.env`, `.env.production`, other deployment variants, then examples, in `folder`; a
    key set in an earlier file wins. Development and test variants are skipped."""
    try:
        names = sorted(n for n in os.listdir(folder) if n == ".env" or n.startswith(".env."))
    except OSError:
        return {}, ""
    names = [n for n in names if not is_development_name(n)]
    names.sort(key=lambda n: (n != ".env", n != ".env.production", "example" in n, n))
    merged: dict[str, str] = {}
    for name in reversed(names):
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                merged.update(read_dotenv(handle.read(1024 * 1024)))
        except OSError:
            continue
    return merged, ", ".join(names)


def evaluate(node: ast.AST, scope: Scope) -> Any:
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, str):
            return value
        return value if isinstance(value, int | float) and not isinstance(value, bool) else UNKNOWN
    if isinstance(node, ast.Name):
        return scope.constants.get(node.id, UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "settings":  # django.conf.settings: the settings file read
            return scope.settings.get(node.attr, UNKNOWN)
        return UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = evaluate(node.operand, scope)
        if not isinstance(operand, int | float):
            return UNKNOWN
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        left, right = evaluate(node.left, scope), evaluate(node.right, scope)
        if left is UNKNOWN or right is UNKNOWN or left is None or right is None:
            return UNKNOWN
        try:
            return ARITHMETIC[type(node.op)](left, right)
        except (ZeroDivisionError, OverflowError, TypeError):
            return UNKNOWN
    if isinstance(node, ast.Call):
        return _call(node, scope)
    return UNKNOWN


def _call(node: ast.Call, scope: Scope) -> Any:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in CASTS and len(node.args) == 1 and not isinstance(node.args[0], ast.Constant):
        inner = evaluate(node.args[0], scope)
        try:
            return CASTS[name](inner) if inner is not UNKNOWN and inner is not None else inner
        except (TypeError, ValueError):
            return UNKNOWN
    if name not in ENV_READERS or not node.args:
        return UNKNOWN
    if name == "get" and not _is_environ(func):
        return UNKNOWN
    key = node.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return UNKNOWN
    default_node = (
        node.args[1]
        if len(node.args) > 1
        else next((k.value for k in node.keywords if k.arg == "default"), None)
    )
    if key.value in scope.env:
        raw = scope.env[key.value]
        cast = CASTS.get(name)
        if cast is None:
            return _number_or_text(raw)
        try:
            return cast(raw) if raw else None
        except ValueError:
            return UNKNOWN
    # No default: django-environ refuses to start and os.getenv gives None; either way the
    # deployment's environment decides, which the doctor cannot see.
    return evaluate(default_node, scope) if default_node is not None else UNKNOWN


def _is_environ(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and (func.value.attr == "environ")
    )


def _number_or_text(raw: str) -> Any:
    if not raw:
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            continue
    return raw


def collect_constants(tree: ast.AST, scope: Scope) -> dict[str, Any]:
    """Upper-case names assigned a value the evaluator knows, in source order, module or class
    level; a later unknown assignment forgets the name."""
    assigns = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1),
        key=lambda n: (n.lineno, n.col_offset),
    )
    out: dict[str, Any] = {}
    inner = Scope(out, scope.env, scope.env_files, scope.settings)
    for node in assigns:
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id.isupper():
            value = evaluate(node.value, inner)
            if value is not UNKNOWN:
                out[target.id] = value
            else:
                out.pop(target.id, None)
    return out

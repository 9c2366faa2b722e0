"""Settings values that are not literals but can still be known: arithmetic (`60 * 60`), names
bound earlier (`CELERY_SOFT_TIME_LIMIT + 60`), and environment reads with a default
(`env("CELERY_TASK_SOFT_TIME_LIMIT", None)`, `int(os.getenv("LIMIT", 600))`), resolved from the
project's own .env files or else their default. The readers people use are all understood:
`os.environ.get`, `os.getenv`, django-environ's `env.int`, python-decouple's
`config(..., cast=int)`, dynaconf's `settings.get(KEY, default)` and pydantic `BaseSettings`
fields (`settings.limit` is the field's default unless an .env file sets LIMIT). A value taken
from a default is recorded in `Scope.defaults`, so the report can say it came from one.
Anything else is UNKNOWN, never a guess."""

from __future__ import annotations

import ast
import operator
import os
import re
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
    ast.Pow: lambda base, exp: base**exp if isinstance(exp, int) and 0 <= exp <= 64 else UNKNOWN,
}
# env("K", d), env.int("K", d), os.getenv("K", d), os.environ.get("K", d), config("K", default=d)
ENV_READERS = {"env", "getenv", "get", "config", "int", "str", "bool", "float", "as_int"}
# Receivers whose .get(KEY, default) reads the environment or a settings store (dynaconf).
GETTERS = {"environ", "settings", "env", "dynaconf"}
# Names of objects whose methods read the environment (cfenv's `env.get_credential`).
ENV_OBJECTS = {"env", "environ", "environment"}
SETTINGS_BASES = {"BaseSettings", "Settings"}  # pydantic(-settings)
CASTS: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "str": str}


@dataclass
class Scope:
    constants: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the project's .env files, merged
    env_files: str = ""  # their names, for notes
    # The settings file's own names, for `settings.CELERY_SOFT_TIME_LIMIT` in task modules.
    settings: dict[str, Any] = field(default_factory=dict)
    # The environment keys whose default was taken because no .env file sets them.
    defaults: list[str] = field(default_factory=list)
    # Names bound to such a default (`LIMIT = int(os.getenv("LIMIT", 600))`): name -> key.
    defaulted: dict[str, str] = field(default_factory=dict)
    # django-environ's scheme, `environ.Env(LIMIT=(int, 43200))`: key -> (cast, default).
    scheme: dict[str, tuple[str | None, ast.expr]] = field(default_factory=dict)
    # Names a module takes from a project module (`from src.config import HARD_LIMIT`), known
    # as that module defines them; and each such module's constants, read once: path -> names.
    imported: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, tuple[dict[str, Any], dict[str, str]]] = field(default_factory=dict)


def env_scheme(tree: ast.AST) -> dict[str, tuple[str | None, ast.expr]]:
    """`env = environ.Env(DD_CELERY_TASK_TIME_LIMIT=(int, 43200), ...)` (or FileAwareEnv): the
    default (and cast) that a later `env("DD_CELERY_TASK_TIME_LIMIT")` without one returns."""
    out: dict[str, tuple[str | None, ast.expr]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _callee_name(node).endswith("Env")):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg and isinstance(value, ast.Tuple) and len(value.elts) == 2:
                cast, default = value.elts
                out[keyword.arg] = (cast.id if isinstance(cast, ast.Name) else None, default)
    return out


def _callee_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


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
        if value is None or isinstance(value, str | bool):
            return value
        return value if isinstance(value, int | float) and not isinstance(value, bool) else UNKNOWN
    if isinstance(node, ast.Name):
        if node.id in scope.defaulted and node.id in scope.constants:
            scope.defaults.append(scope.defaulted[node.id])
        return scope.constants.get(node.id, UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        field_key = f"{node.value.id}.{node.attr}"  # a pydantic settings instance's field
        if field_key in scope.constants:
            if field_key in scope.defaulted:
                scope.defaults.append(scope.defaulted[field_key])
            return scope.constants[field_key]
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
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        return _or_fallback(node.values[0], node.values[1], scope)
    if isinstance(node, ast.Call):
        return _call(node, scope)
    if isinstance(node, ast.Dict):
        return _dict(node, scope)
    return UNKNOWN


def _dict(node: ast.Dict, scope: Scope) -> Any:
    """broker_transport_options = {"region": os.environ["R"], "visibility_timeout":
    int(os.environ.get("V", "900"))}: each value on its own, UNKNOWN where unresolvable, so
    the one a rule needs is read (or said unknown) whatever its neighbours are."""
    out: dict[str, Any] = {}
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        key = evaluate(key_node, scope) if key_node is not None else UNKNOWN
        if not isinstance(key, str):
            return UNKNOWN  # a **spread or a computed key: the mapping is not known
        out[key] = evaluate(value_node, scope)
    return out


def _or_fallback(first: ast.expr, second: ast.expr, scope: Scope) -> Any:
    """`os.environ.get("HDX_HARD_TASK_LIMIT") or config.get("HDX", "HDX_HARD_TASK_LIMIT",
    fallback=6 * 60 * 60)`: an environment read without a default, falling back to the right
    side while the deployment does not set it, as `os.environ.get(KEY, right)` would."""
    if not (isinstance(first, ast.Call) and not first.keywords and len(first.args) == 1):
        return UNKNOWN
    key = first.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return UNKNOWN
    name = _callee_name(first)
    if name not in ("getenv", "get") or (name == "get" and not _is_getter(first.func)):
        return UNKNOWN
    if scope.env.get(key.value):
        return _number_or_text(scope.env[key.value])
    before = len(scope.defaults)
    value = evaluate(second, scope)
    if value is not UNKNOWN and value is not None and len(scope.defaults) == before:
        scope.defaults.append(key.value)
    return value


def _ini_fallback(node: ast.Call, scope: Scope) -> Any:
    """configparser's `config.get("HDX", "HDX_HARD_TASK_LIMIT", fallback=21600)` (or
    getint/getfloat): the fallback while the ini file, which is the deployment's and not in the
    project, leaves the option out; recorded as a default, like an environment default."""
    section, option = node.args
    fallback = next(k.value for k in node.keywords if k.arg == "fallback")
    assert isinstance(section, ast.Constant) and isinstance(option, ast.Constant)
    value = evaluate(fallback, scope)
    if value is not UNKNOWN and value is not None:
        scope.defaults.append(f"[{section.value!s}] {option.value!s}")
    return value


def _is_ini_read(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "getint", "getfloat")
        and len(node.args) == 2
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
        and any(k.arg == "fallback" for k in node.keywords)
    )


def _call(node: ast.Call, scope: Scope) -> Any:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if _is_ini_read(node):
        return _ini_fallback(node, scope)
    if name in CASTS and len(node.args) == 1 and not isinstance(node.args[0], ast.Constant):
        inner = evaluate(node.args[0], scope)
        try:
            return CASTS[name](inner) if inner is not UNKNOWN and inner is not None else inner
        except (TypeError, ValueError):
            return UNKNOWN
    helper = name not in ENV_READERS and _env_helper(name, node)
    if (name not in ENV_READERS and not helper) or not node.args:
        return UNKNOWN
    if name == "get" and not _is_getter(func):
        return UNKNOWN
    key = node.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return UNKNOWN
    default_node = (
        node.args[1]
        if len(node.args) > 1
        else next((k.value for k in node.keywords if k.arg == "default"), None)
    )
    cast_node = next((k.value for k in node.keywords if k.arg == "cast"), None)
    if default_node is None and key.value in scope.scheme:
        scheme_cast, default_node = scope.scheme[key.value]
        cast_node = ast.Name(scheme_cast) if scheme_cast and cast_node is None else cast_node
    cast = CASTS.get(name if name != "as_int" else "int") or (
        CASTS.get(cast_node.id) if isinstance(cast_node, ast.Name) else None
    )
    if helper:  # get_int_from_env: the type its name says, else the value as written
        cast = next((CASTS[t] for t in ("int", "float") if t in name.lower()), None)
    if key.value in scope.env:
        raw = scope.env[key.value]
        if cast is None:
            return _number_or_text(raw)
        try:
            return cast(raw) if raw else None
        except ValueError:
            return UNKNOWN
    # No default: django-environ refuses to start and os.getenv gives None; either way the
    # deployment's environment decides, which the doctor cannot see.
    if default_node is None:
        return UNKNOWN
    value = evaluate(default_node, scope)
    if value is not UNKNOWN and value is not None:
        scope.defaults.append(key.value)
    if cast is not None and isinstance(value, str):  # decouple: config("K", "600", cast=int)
        try:
            return cast(value)
        except ValueError:
            return UNKNOWN
    return value


_ENV_KEY = re.compile(r"[A-Z][A-Z0-9_]*")


def _env_helper(name: str, node: ast.Call) -> bool:
    """A project's own environment helper, `get_int_from_env("PAPERLESS_WORKER_TIMEOUT", 1800)`
    or `env_int("LIMIT", 600)`: "env" in its name, an environment-style key first, and a
    default (second, or default=) that is the value while the deployment does not set it."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    # `env.get_credential("DOWNLOAD_HARD_LIMIT", 300)`: a method of an environment object.
    on_env = isinstance(receiver, ast.Name) and receiver.id.lower() in ENV_OBJECTS
    if ("env" not in name.lower() and not on_env) or not node.args:
        return False
    key = node.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return False
    return _ENV_KEY.fullmatch(key.value) is not None and (
        len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
    )


def _is_getter(func: ast.expr) -> bool:
    """`os.environ.get`, `environ.get`, dynaconf's `settings.get`: a read with a default."""
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return name in GETTERS


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
    level; a later unknown assignment forgets the name. A pydantic settings class's fields are
    known through its instances (`settings = Settings()` makes `settings.limit` a value)."""
    assigns = sorted(
        (
            n
            for n in ast.walk(tree)
            if (isinstance(n, ast.Assign) and len(n.targets) == 1)
            or (isinstance(n, ast.AnnAssign) and n.value is not None)
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    out: dict[str, Any] = dict(scope.imported)
    inner = Scope(out, scope.env, scope.env_files, scope.settings, scope.defaults, scope.defaulted)
    fields = settings_fields(tree, inner)
    scope.defaults.clear()
    for node in assigns:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        assert node.value is not None
        if not isinstance(target, ast.Name):
            continue
        made = node.value
        if (
            isinstance(made, ast.Call)
            and isinstance(made.func, ast.Name)
            and made.func.id in fields
        ):
            for name, (value, key) in fields[made.func.id].items():
                out[f"{target.id}.{name}"] = value
                if key:
                    scope.defaulted[f"{target.id}.{name}"] = key
        elif target.id.isupper():
            before = len(scope.defaults)
            value = evaluate(node.value, inner)
            if value is not UNKNOWN:
                out[target.id] = value
                if len(scope.defaults) > before:
                    scope.defaulted[target.id] = ", ".join(dict.fromkeys(scope.defaults[before:]))
            else:
                out.pop(target.id, None)
            del scope.defaults[before:]
    return out


def settings_fields(tree: ast.AST, scope: Scope) -> dict[str, dict[str, tuple[Any, str]]]:
    """{class: {field: (value, the env key when the value is the field's default)}} of each
    pydantic settings class (`class Settings(BaseSettings)`): a field is its default
    (`limit: int = 600`, `Field(600)`, `Field(default=600)`) unless one of the project's .env
    files sets it (pydantic matches the name case-insensitively)."""
    out: dict[str, dict[str, tuple[Any, str]]] = {}
    env = {k.lower(): v for k, v in scope.env.items()}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {
            b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases
        }
        inherited = {k: v for b in bases if b in out for k, v in out[b].items()}
        if not (bases & SETTINGS_BASES or inherited):
            continue
        found = dict(inherited)
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            name = item.target.id
            if name.lower() in env:
                found[name] = (_number_or_text(env[name.lower()]), "")
                continue
            default = item.value
            if isinstance(default, ast.Call) and getattr(default.func, "id", "") == "Field":
                default = (
                    default.args[0]
                    if default.args
                    else next((k.value for k in default.keywords if k.arg == "default"), None)
                )
            value = evaluate(default, scope) if default is not None else UNKNOWN
            if value is not UNKNOWN:
                found[name] = (value, name.upper() if value is not None else "")
        out[node.name] = found
    return out

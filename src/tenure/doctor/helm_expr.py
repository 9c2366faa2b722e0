"""Go-template expressions of a Helm chart: pipelines (`a | b c`), parenthesised calls and the
Sprig functions charts build container commands with (`list`, `concat`, `append`, `omit`,
`merge`, `deepCopy`, `default`, `quote`, `toYaml`...). A word (`.Values.x`, `$spec.image`,
`.`) is looked up by the caller's `resolve`; anything else evaluates to MISSING, which the
renderer reports as not followed rather than guessing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

MISSING: Any = object()
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|\(|\)|\||[^\s()|]+')
Resolve = Callable[[str], Any]


def empty(value: Any) -> bool:
    """Sprig's `default` and `empty`: nil, false, 0, "" and empty collections."""
    return value is MISSING or value is None or value is False or value in ("", 0, [], {})


def evaluate(expression: str, resolve: Resolve) -> Any:
    tokens = TOKEN.findall(expression)
    value, rest = _pipeline(tokens, resolve)
    return value if not rest else MISSING


def _pipeline(tokens: list[str], resolve: Resolve) -> tuple[Any, list[str]]:
    """A pipeline up to a closing parenthesis (or the end): each stage's value is the last
    argument of the next."""
    value, tokens = _command(tokens, resolve, None)
    while tokens and tokens[0] == "|":
        value, tokens = _command(tokens[1:], resolve, value)
    return value, tokens


def _command(tokens: list[str], resolve: Resolve, piped: Any) -> tuple[Any, list[str]]:
    args: list[Any] = []
    while tokens and tokens[0] not in ("|", ")"):
        token, tokens = tokens[0], tokens[1:]
        if token == "(":
            inner, tokens = _pipeline(tokens, resolve)
            if not tokens or tokens[0] != ")":
                return MISSING, []
            tokens = tokens[1:]
            args.append(inner)
        else:
            args.append(token)
    if not args:
        return MISSING, tokens
    head = args[0]
    if isinstance(head, str) and head in FUNCTIONS:
        values = [_atom(a, resolve) for a in args[1:]]
        if piped is not None:
            values.append(piped)
        try:
            return FUNCTIONS[head](*values), tokens
        except (TypeError, ValueError, IndexError, KeyError):
            return MISSING, tokens
    if len(args) != 1 or piped is not None:
        return MISSING, tokens  # an unknown function (`include`, `tpl`, `printf`...)
    return _atom(head, resolve), tokens


def _atom(arg: Any, resolve: Resolve) -> Any:
    if not isinstance(arg, str):
        return arg  # a parenthesised pipeline's value
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in '"`':
        return arg[1:-1]
    if re.fullmatch(r"-?\d+(\.\d+)?", arg):
        return arg  # kept as written: a rendered number reads the same
    if arg in ("true", "false"):
        return arg == "true"
    if arg == "nil":
        return None
    return resolve(arg)


def _known(*values: Any) -> None:
    if any(v is MISSING for v in values):
        raise ValueError("unknown operand")


def _list(*items: Any) -> list[Any]:
    _known(*items)
    return list(items)


def _concat(*lists: Any) -> list[Any]:
    _known(*lists)
    out: list[Any] = []
    for part in lists:
        out.extend(part if isinstance(part, list) else [])
    return out


def _append(items: Any, item: Any) -> list[Any]:
    _known(items, item)
    return [*items, item]


def _prepend(items: Any, item: Any) -> list[Any]:
    _known(items, item)
    return [item, *items]


def _omit(mapping: Any, *keys: Any) -> dict[str, Any]:
    _known(mapping)
    return {k: v for k, v in mapping.items() if k not in keys}


def _pick(mapping: Any, *keys: Any) -> dict[str, Any]:
    _known(mapping)
    return {k: v for k, v in mapping.items() if k in keys}


def merge_maps(*maps: Any) -> dict[str, Any]:
    """Sprig's `merge DEST SRC...`: the first map's keys win, nested maps merged."""
    _known(*maps)
    merged: dict[str, Any] = {}
    for layer in reversed(maps):
        merged = _deep(merged, layer)
    return merged


def _merge_overwrite(*maps: Any) -> dict[str, Any]:
    return merge_maps(*reversed(maps))


def _deep(base: dict[str, Any], over: Any) -> dict[str, Any]:
    out = dict(base)
    for key, value in dict(over).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep(out[key], value)
        else:
            out[key] = value
    return out


def _default(fallback: Any, value: Any = MISSING) -> Any:
    return fallback if empty(value) else value


def _dict(*pairs: Any) -> dict[str, Any]:
    _known(*pairs)
    return {str(pairs[i]): pairs[i + 1] for i in range(0, len(pairs) - 1, 2)}


def _get(mapping: Any, key: Any) -> Any:
    _known(mapping)
    return mapping.get(key, "")


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _quote(*values: Any) -> str:
    _known(*values)
    return " ".join(json.dumps(scalar(v)) for v in values)


def _same(value: Any) -> Any:
    _known(value)
    return value


def _to_json(value: Any) -> str:
    _known(value)
    return json.dumps(value)


def _int(value: Any) -> Any:
    _known(value)
    return str(int(float(value)))


def _indent(_width: Any, text: Any) -> Any:
    return _same(text)  # the renderer places the line; the value is what matters


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "list": _list, "tuple": _list, "concat": _concat, "append": _append, "mustAppend": _append,
    "prepend": _prepend, "omit": _omit, "pick": _pick, "merge": merge_maps,
    "mustMerge": merge_maps, "mergeOverwrite": _merge_overwrite, "deepCopy": _same,
    "mustDeepCopy": _same, "default": _default, "dict": _dict, "get": _get, "quote": _quote,
    "toString": lambda v: scalar(_same(v)), "int": _int, "int64": _int, "toYaml": _same,
    "toJson": _to_json, "toRawJson": _to_json, "nindent": _indent, "indent": _indent,
    "trim": lambda v: scalar(_same(v)).strip(),
}  # fmt: skip

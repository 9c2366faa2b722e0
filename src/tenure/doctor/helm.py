"""Helm charts: a chart's templates rendered with its values, line for line, so the Kubernetes
reader sees the grace periods and worker commands that live in `values.yaml`.

Only the simple substitutions are rendered: `{{ .Values.a.b }}`, with `| default X`,
`default X .Values.a.b`, `quote`, `int`, and `toYaml`/`toJson` of a list or map (written as a
YAML flow collection at the action's own indentation). Control actions (`if`, `range`,
`with`, `end`, `include`, `define`...) standing alone on a line become blank lines; elsewhere
they render as nothing. Every line keeps its number, so findings point at the template.
Values are `values.yaml`, overridden by a production variant (`values-production.yaml`,
`values.prod.yaml`) when the chart has one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

import yaml

from tenure.doctor.helm_expr import MISSING, evaluate, scalar

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
VALUES_PATH = re.compile(r"^\.Values((?:\.[A-Za-z_][\w-]*)*)$")
CONTROL = ("if ", "else", "end", "range ", "with ", "define ", "template ", "include ",
           "block ", "/*")  # fmt: skip
ASSIGNMENT = re.compile(r"^\$\w*\s*:?=")
# `$instanceValues := merge $instance $.Values.worker`: a variable the template reads later.
ASSIGN = re.compile(r"^\$(\w+)\s*(:?=)\s*(.+)$")


def chart_root(path: str) -> str | None:
    """The chart folder when `path` is one of its templates (`chart/templates/x.yaml`, or in a
    sub-folder, `chart/templates/celery/deployment.yaml`)."""
    folder = os.path.dirname(path)
    for _ in range(4):
        if os.path.basename(folder) == "templates":
            chart = os.path.dirname(folder)
            if os.path.isfile(os.path.join(chart, "Chart.yaml")):
                return chart
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def chart_values(chart: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    production = re.compile(r"values[.-](prod|production)[\w.-]*\.ya?ml")
    names = ["values.yaml", *sorted(n for n in _listdir(chart) if production.fullmatch(n))]
    for name in names:
        try:
            with open(os.path.join(chart, name), encoding="utf-8", errors="replace") as handle:
                document = yaml.load(handle.read(1024 * 1024), Loader=_Loader)
        except (OSError, yaml.YAMLError, RecursionError):
            continue
        if isinstance(document, dict):
            merged = _merge(merged, document)
    return merged


@dataclass
class _Scope:
    """What `.` and the `$variables` are inside a `with` or `range` block; `live` is False in a
    block Helm skips (a `with` of an empty value, a `range` over an empty list)."""

    dot: Any
    variables: dict[str, Any]
    live: bool = True


# Keys whose value decides a finding: an action there that cannot be rendered is said.
WATCHED = re.compile(r"^\s*-?\s*(command|args|terminationGracePeriodSeconds)\s*:")


def render(text: str, values: dict[str, Any], notes: list[str] | None = None) -> str:
    """The template rendered line for line; `notes` gets each action under a command, args or
    grace key that could not be rendered ("line 56: `{{ ... }}` not followed")."""
    lines = text.split("\n")
    out: list[str] = []
    scopes = [_Scope(values, {"$": values})]
    for number, raw in enumerate(lines, 1):
        actions = list(ACTION.finditer(raw))
        if not actions:
            out.append(raw if scopes[-1].live else "")
            continue
        if notes is not None and scopes[-1].live:
            above = next((line for line in reversed(out) if line.strip()), "")
            if WATCHED.match(raw) or (ACTION.sub("", raw).strip() == "" and WATCHED.match(above)):
                notes += _unrendered(number, actions, values, scopes[-1])
        alone = ACTION.sub("", raw).strip() == "" and len(actions) == 1
        if (alone and _block(actions[0].group(1), scopes)) or not scopes[-1].live:
            out.append("")
        elif alone:
            above = next((line for line in reversed(out) if line.strip()), "")
            out.append(_alone(raw, actions[0].group(1), values, scopes[-1], above))
        else:
            # Blocks opened or closed inside a line (`{{- if .x }}a: 1`) still nest.
            out.append(ACTION.sub(lambda m: _piece(m.group(1), values, scopes), raw))
    return "\n".join(out)


def _unrendered(
    number: int, actions: list[re.Match[str]], values: dict[str, Any], scope: _Scope
) -> list[str]:
    lost = [a.group(1) for a in actions if not _control(a.group(1))]
    lost = [a for a in lost if _term(a, values, scope) is MISSING]
    return [f"line {number}: `{{{{ {action} }}}}` not followed" for action in lost]


def _piece(action: str, values: dict[str, Any], scopes: list[_Scope]) -> str:
    return "" if _block(action, scopes) else _inline(action, values, scopes[-1])


_RANGE = re.compile(r"^range\s+(?:\$(\w+)\s*(?:,\s*\$(\w+)\s*)?:=\s*)?(.+)$")


def _block(action: str, scopes: list[_Scope]) -> bool:
    """Open or close a `with` / `range` / `if` block on `scopes`; True for a control action."""
    outer = scopes[-1]
    if action.startswith("end"):
        if len(scopes) > 1:
            scopes.pop()
        return True
    if action.startswith("with "):
        value = _term(action[5:].strip(), outer.variables["$"], outer)
        scopes.append(_Scope(value if value is not MISSING else MISSING, dict(outer.variables),
                             outer.live and not _empty(value)))  # fmt: skip
        return True
    match = _RANGE.match(action)
    if match is not None:
        # Every item renders on the same lines: the first stands for them (a chart's list of
        # workers usually holds one), so the reader sees one container with its values.
        # A map is ranged in key order, as Go does; `$key, $item` or `$index, $item`.
        first, second, expression = match.groups()
        value = _term(expression.strip(), outer.variables["$"], outer)
        key, item = _first(value)
        variables = dict(outer.variables)
        if second is not None:
            variables[first] = key
            variables[second] = item
        elif first is not None:
            variables[first] = item
        scopes.append(_Scope(item, variables, outer.live and not _empty(value)))
        return True
    if action.startswith(("if ", "define ", "block ")):
        scopes.append(_Scope(outer.dot, dict(outer.variables), outer.live))
        return True
    assigned = ASSIGN.match(action)
    if assigned is not None:
        name, operator, expression = assigned.groups()
        value = _assigned(expression.strip(), outer)
        # `$x = ...` inside an `if` changes the variable the enclosing blocks see too.
        targets = [s for s in scopes if name in s.variables] if operator == "=" else []
        for target in targets or [outer]:
            if value is MISSING:
                target.variables.pop(name, None)
            else:
                target.variables[name] = value
    return _control(action) or "include" in action


def _assigned(expression: str, scope: _Scope) -> Any:
    """The value of `$x := PIPELINE` (`merge`, `list`, `concat`... included)."""
    return _term(expression, scope.variables["$"], scope)


def _control(action: str) -> bool:
    return action.startswith(CONTROL) or ASSIGNMENT.match(action) is not None


def _first(value: Any) -> tuple[Any, Any]:
    """The key (or index) and item a `range` renders: a map's first key, as Go sorts them."""
    if isinstance(value, dict) and value:
        return min(value.items(), key=lambda pair: str(pair[0]))
    if isinstance(value, list) and value:
        return 0, value[0]
    return MISSING, MISSING


def _empty(value: Any) -> bool:
    """Helm skips a `with`/`range` block on these; an unknown value (MISSING) is rendered."""
    return value is not MISSING and (value is None or value is False or value in ("", [], {}))


def _alone(raw: str, action: str, values: dict[str, Any], scope: _Scope, above: str) -> str:
    """A line holding one action only: a control line is blank; `toYaml X | nindent N` is the
    value as a flow collection at the line's indentation (two deeper when it is the value of
    the key on the line above, where block YAML would put a sequence's dashes)."""
    indent = raw[: len(raw) - len(raw.lstrip())]
    if _control(action) or action.startswith("include"):
        return ""
    value = _term(action, values, scope)
    if value is MISSING or value is None:
        return ""
    if isinstance(value, dict | list):
        key = above.rstrip()
        if key.endswith(":") and len(above) - len(above.lstrip()) == len(indent):
            indent += "  "
        return indent + json.dumps(value)
    return indent + scalar(value)


def _inline(action: str, values: dict[str, Any], scope: _Scope | None = None) -> str:
    if _control(action):
        return ""
    value = _term(action, values, scope)
    return "" if value in (MISSING, None) else scalar(value)


def _term(term: str, values: dict[str, Any], scope: _Scope | None = None) -> Any:
    return evaluate(term, lambda word: _word(word, values, scope))


def _word(word: str, values: dict[str, Any], scope: _Scope | None) -> Any:
    if word.startswith(".Values"):
        return _lookup(word, scope.variables["$"] if scope else values)
    if word.startswith(("$", ".")) and scope is not None:
        return _scoped(word, scope)
    return MISSING


def _scoped(word: str, scope: _Scope) -> Any:
    """`.`, `.name` (the `with`/`range` value's field), `$.Values.x`, `$worker.args`."""
    match = re.fullmatch(r"(\$\w*|)((?:\.[A-Za-z_][\w-]*)*)\.?", word)
    if match is None:
        return MISSING
    head, path = match.groups()
    if head == "$":
        node: Any = scope.variables["$"]
        if path.startswith(".Values"):
            path = path[len(".Values") :]
        else:
            return MISSING
    elif head:
        node = scope.variables.get(head[1:], MISSING)
    else:
        if path.startswith((".Values", ".Release", ".Chart", ".Capabilities", ".Template")):
            return MISSING
        node = scope.dot
    for key in filter(None, path.split(".")):
        if not isinstance(node, dict) or key not in node:
            return MISSING
        node = node[key]
    return node


def _lookup(path: str, values: dict[str, Any]) -> Any:
    match = VALUES_PATH.match(path)
    if match is None:
        return MISSING
    node: Any = values
    for key in filter(None, match.group(1).split(".")):
        if not isinstance(node, dict) or key not in node:
            return MISSING
        node = node[key]
    return node


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []

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
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
VALUES_PATH = re.compile(r"^\.Values((?:\.[A-Za-z_][\w-]*)*)$")
CONTROL = ("if ", "else", "end", "range ", "with ", "define ", "template ", "include ",
           "block ", "/*", "$")  # fmt: skip
MISSING: Any = object()


def chart_root(path: str) -> str | None:
    """The chart folder when `path` is one of its templates (`chart/templates/x.yaml`)."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) != "templates":
        return None
    chart = os.path.dirname(folder)
    return chart if os.path.isfile(os.path.join(chart, "Chart.yaml")) else None


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


def render(text: str, values: dict[str, Any]) -> str:
    lines = text.split("\n")
    out = []
    for raw in lines:
        actions = list(ACTION.finditer(raw))
        if not actions:
            out.append(raw)
            continue
        alone = ACTION.sub("", raw).strip() == "" and len(actions) == 1
        if alone:
            out.append(_alone(raw, actions[0].group(1), values))
        else:
            out.append(ACTION.sub(lambda m: _inline(m.group(1), values), raw))
    return "\n".join(out)


def _alone(raw: str, action: str, values: dict[str, Any]) -> str:
    """A line holding one action only: a control line is blank; `toYaml .Values.x | nindent N`
    is the value as a flow collection at the line's indentation."""
    indent = raw[: len(raw) - len(raw.lstrip())]
    words = action.split("|")[0].split()
    if len(words) == 2 and words[0] in ("toYaml", "toJson"):
        value = _lookup(words[1], values)
        return indent + json.dumps(value) if value is not MISSING else ""
    if action.startswith(CONTROL) or "include" in action:
        return ""
    return indent + _inline(action, values)


def _inline(action: str, values: dict[str, Any]) -> str:
    if action.startswith(CONTROL):
        return ""
    stages = [s.strip() for s in action.split("|")]
    value = _term(stages[0], values)
    for stage in stages[1:]:
        words = stage.split(None, 1)
        if not words:
            continue
        if words[0] == "default" and len(words) == 2 and value in (MISSING, None, ""):
            value = _term(words[1], values)
        elif words[0] == "quote" and value is not MISSING:
            value = json.dumps(_scalar(value))
        elif words[0] in ("toYaml", "toJson") and value is not MISSING:
            value = json.dumps(value)
    return "" if value in (MISSING, None) else _scalar(value)


def _term(term: str, values: dict[str, Any]) -> Any:
    words = term.split()
    if len(words) == 3 and words[0] == "default":  # default X .Values.a
        value = _lookup(words[2], values)
        return value if value not in (MISSING, None, "") else _term(words[1], values)
    if len(words) == 2 and words[0] in ("quote", "int", "toString", "toYaml", "toJson"):
        value = _lookup(words[1], values)
        if value is MISSING:
            return MISSING
        if words[0] == "quote":
            return json.dumps(_scalar(value))
        return json.dumps(value) if words[0] in ("toYaml", "toJson") else value
    if len(words) == 1:
        word = words[0]
        if word.startswith(".Values"):
            return _lookup(word, values)
        if re.fullmatch(r"-?\d+(\.\d+)?", word):
            return word
        if len(word) >= 2 and word[0] == word[-1] == '"':
            return word[1:-1]
    return MISSING


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


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


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

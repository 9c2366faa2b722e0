"""YAML documents as plain dicts and lists that remember the line of every key.

PyYAML's constructed objects forget where they came from; a finding must point at the line of
`stop_grace_period`, so documents are composed into nodes and converted here. Aliases are
converted once and shared, so a "billion laughs" file costs no more than its text.
"""

from __future__ import annotations

from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlProblem(Exception):
    """The file is not YAML this reader can use."""


class YMap(dict[str, Any]):
    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class YList(list[Any]):
    line: int = 0
    item_lines: list[int]  # each item's first line (`- QUEUE_CONNECTION=sync`)


def load_documents(text: str) -> list[Any]:
    """Every document of a (multi-document) YAML text; raises YamlProblem when malformed."""
    try:
        return [_convert(node, {}) for node in yaml.compose_all(text, Loader=_Loader) if node]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise YamlProblem(f"malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise YamlProblem("YAML nested too deeply") from None


def _convert(node: yaml.Node, seen: dict[int, Any]) -> Any:
    if id(node) in seen:
        return seen[id(node)]
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping = YMap()
        mapping.line = line
        mapping.key_lines = {}
        seen[id(node)] = mapping
        merged: list[YMap] = []
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged.extend(_merge_sources(_convert(value_node, seen)))
                continue
            key = _convert(key_node, seen)
            if not isinstance(key, str | int | float | bool) and key is not None:
                continue
            mapping[str(key)] = _convert(value_node, seen)
            mapping.key_lines[str(key)] = key_node.start_mark.line + 1
        # `<<: *defaults` fills only what the mapping does not set itself (YAML merge keys).
        for source in merged:
            for key, value in source.items():
                if key not in mapping:
                    mapping[key] = value
                    mapping.key_lines[key] = source.line_of(key)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = YList()
        items.line = line
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
        seen[id(node)] = items
        items.extend(_convert(child, seen) for child in node.value)
        return items
    value = _scalar(node)
    seen[id(node)] = value
    return value


def _merge_sources(value: Any) -> list[YMap]:
    if isinstance(value, YMap):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, YMap)]
    return []


def _scalar(node: yaml.Node) -> Any:
    text = str(node.value)
    tag = node.tag
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return text.lower() in ("true", "yes", "on", "y")
    if tag == "tag:yaml.org,2002:int":
        try:
            return int(text.replace("_", ""), 0)
        except ValueError:
            return text
    if tag == "tag:yaml.org,2002:float":
        try:
            return float(text.replace("_", ""))
        except ValueError:
            return text
    return text


def get_path(data: Any, *keys: str) -> Any:
    """data[k1][k2]... or None when any step is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def line_of(data: Any, key: str) -> int | None:
    if isinstance(data, YMap):
        return data.line_of(key)
    return None

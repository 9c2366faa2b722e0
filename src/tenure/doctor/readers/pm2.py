"""pm2 process files: `apps:` in ecosystem.config.js / .cjs, ecosystem.json or a YAML file
(`pm2.yaml`, `process.yml`). pm2 stops an app with SIGINT and SIGKILLs it `kill_timeout`
milliseconds later, 1600 ms when unset (FACTS.md). An app's command is its `script` (a whole
command line, or a file run by `interpreter`) followed by its `args`.

A JavaScript file is not run: its `apps` array is read as a literal, top-level keys whose values
are strings, numbers or arrays of strings. A value computed in code (a variable, a template
with `${...}`) is not read, and an app whose command is not written out is not an app here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import seconds
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.readers.yamlnodes import YMap

DEFAULT_KILL_TIMEOUT_MS = 1600.0


@dataclass
class App:
    name: str
    unit: Source  # the app's entry: what `pm2 stop` stops
    command_at: Source
    argv: list[str]
    instances: int
    grace: Value | None  # None: kill_timeout written but not a number


def is_pm2(document: Any) -> bool:
    """`apps:` holding entries with a `script` (no Compose file or manifest has `apps:`)."""
    apps = document.get("apps") if isinstance(document, dict) else None
    return isinstance(apps, list) and any(isinstance(a, dict) and "script" in a for a in apps)


def yaml_apps(path: str, document: YMap) -> Iterator[App]:
    for entry in document["apps"]:
        if isinstance(entry, YMap) and "script" in entry:
            lines = {key: entry.line_of(key) for key in entry}
            yield _app(path, dict(entry), lines, entry.line)


def text_apps(path: str, text: str) -> Iterator[App]:
    """The apps of an ecosystem .js/.cjs/.json file."""
    for values, lines, start in _literal_apps(text):
        if "script" in values:
            yield _app(path, values, lines, start)


def _app(path: str, values: dict[str, Any], lines: dict[str, int], start: int) -> App:
    script = values.get("script")
    argv = split_command(str(script)) if isinstance(script, str) else []
    interpreter = values.get("interpreter")
    if isinstance(interpreter, str) and interpreter not in ("", "none"):
        argv = [interpreter, *argv]
    args = values.get("args")
    if isinstance(args, list):
        argv += [str(a) for a in args]
    elif isinstance(args, str):
        argv += split_command(args)
    instances = seconds(values.get("instances") or 1)
    return App(
        name=str(values.get("name", script)),
        unit=Source(path, lines.get("name", start)),
        command_at=Source(path, lines.get("script", start)),
        argv=argv,
        instances=int(instances) if instances and instances > 0 else 1,
        grace=_grace(path, values, lines),
    )


def _grace(path: str, values: dict[str, Any], lines: dict[str, int]) -> Value | None:
    label = "pm2 kill_timeout"
    if "kill_timeout" not in values:
        note = "pm2 default kill_timeout 1600 ms"
        return Value(label, DEFAULT_KILL_TIMEOUT_MS / 1000, "s", Source(note=note))
    amount = seconds(values["kill_timeout"])
    at = Source(path, lines["kill_timeout"])
    return Value(label, amount / 1000, "s", at) if amount is not None else None


_APPS = re.compile(r"""(?:\bapps|"apps"|'apps')\s*:\s*\[""")
_KEY = re.compile(r"""\s*(?:([A-Za-z_$][\w$]*)|"([^"\\]*)"|'([^'\\]*)')\s*:\s*""")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _literal_apps(text: str) -> Iterator[tuple[dict[str, Any], dict[str, int], int]]:
    """(values, key lines, first line) of each object literal in the `apps` array."""
    if text.lstrip().startswith(("{", "[")):
        try:
            json.loads(text)
        except ValueError:
            return  # a broken JSON file: nothing read, rather than half of it
    match = _APPS.search(text)
    if match is None:
        return
    code = _blank_comments(text)
    i, depth, start = match.end(), 0, -1
    while i < len(code):
        char = code[i]
        if char in "\"'`":
            i = _string_end(code, i)
            continue
        if char in "{[":
            depth += 1
            if char == "{" and depth == 1:
                start = i
        elif char in "}]":
            if depth == 0:
                return  # the end of the apps array
            depth -= 1
            if char == "}" and depth == 0 and start >= 0:
                yield _object(code, start, i)
                start = -1
        i += 1


def _object(code: str, start: int, end: int) -> tuple[dict[str, Any], dict[str, int], int]:
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    i = start + 1
    while i < end:
        key = _KEY.match(code, i)
        if key is None:
            i = _skip_value(code, i, end)
            continue
        name = key.group(1) or key.group(2) or key.group(3) or ""
        value, i = _value(code, key.end(), end)
        if value is not None:
            values[name] = value
            lines[name] = code.count("\n", 0, key.start(1) if key.group(1) else key.start()) + 1
    return values, lines, code.count("\n", 0, start) + 1


def _value(code: str, i: int, end: int) -> tuple[Any, int]:
    """A string, number or array of strings at i; None for anything computed."""
    after = _skip_value(code, i, end)
    text = code[i:after]
    raw = text.strip().rstrip(",").strip()
    first = i + len(text) - len(text.lstrip())
    if raw[:1] in "\"'" and _string_end(code, first) == first + len(raw):
        return raw[1:-1], after
    if raw[:1] == "`" and "${" not in raw:
        return raw[1:-1], after
    if _NUMBER.fullmatch(raw):
        return float(raw), after
    if raw[:1] == "[":
        items = [s.strip() for s in raw[1:-1].split(",") if s.strip()]
        if all(s[:1] in "\"'`" and s[-1:] == s[:1] and "${" not in s for s in items):
            return [s[1:-1] for s in items], after
    return None, after


def _skip_value(code: str, i: int, end: int) -> int:
    """Past the value at i: to the comma at this depth, or the object's end."""
    depth = 0
    while i < end:
        char = code[i]
        if char in "\"'`":
            i = _string_end(code, i)
            continue
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif char == "," and depth == 0:
            return i + 1
        i += 1
    return end


def _string_end(code: str, i: int) -> int:
    """The index just past the string literal opening at i."""
    quote, i = code[i], i + 1
    while i < len(code) and code[i] != quote:
        i += 2 if code[i] == "\\" else 1
    return i + 1


def _blank_comments(text: str) -> str:
    """`//` and `/* */` comments as spaces (newlines kept, so lines still count)."""
    out = list(text)
    i = 0
    while i < len(text):
        char = text[i]
        if char in "\"'`":
            i = _string_end(text, i)
        elif text.startswith("//", i):
            stop = text.find("\n", i)
            stop = len(text) if stop < 0 else stop
            out[i:stop] = " " * (stop - i)
            i = stop
        elif text.startswith("/*", i):
            stop = text.find("*/", i + 2)
            stop = len(text) if stop < 0 else stop + 2
            out[i:stop] = ["\n" if c == "\n" else " " for c in text[i:stop]]
            i = stop
        else:
            i += 1
    return "".join(out)

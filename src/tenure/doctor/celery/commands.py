"""How a worker's command line is written where the doctor reads it: a bash array of
arguments and worker lines gathered in a string the script `eval`s (commands that start
celery from Python: pylaunch.py)."""

from __future__ import annotations

import re

_ARRAY = re.compile(r"^[ \t]*(\w+)(\+?)=\(([^)]*)\)", re.MULTILINE)
_ARRAY_USE = re.compile(r"\"?\$\{(\w+)\[[@*]\]\}\"?")


_EVAL = re.compile(r"\beval\s+\"?\$\{?(\w+)")


def expand_evaluated(text: str) -> str:
    """`commands+="celery -A app worker -Q scans &"$'\\n'` lines of a variable the script later
    runs with `eval "$commands"`: each assignment's string is the command line it runs, read
    on its own line."""
    evaluated = set(_EVAL.findall(text))
    if not evaluated:
        return text
    names = "|".join(map(re.escape, sorted(evaluated)))
    assignment = re.compile(
        rf"^([ \t]*)(?:{names})\+?=\"((?:[^\"\\]|\\.)*)\"(?:\$'\\n')?[ \t]*$", re.MULTILINE
    )
    return assignment.sub(lambda m: m.group(1) + m.group(2).replace('\\"', '"'), text)


def expand_arrays(text: str) -> str:
    """`celery "${CELERY_ARGS[@]}"` with `CELERY_ARGS=( -A engine worker ... )` (and `+=(...)`
    lines) above it: the array's words written in its place, on the same line, so the command
    is read as the shell runs it. Words added under a condition are taken as added."""
    if "[@]}" not in text and "[*]}" not in text:
        return text
    arrays: dict[str, list[str]] = {}
    for match in _ARRAY.finditer(text):
        name, more, body = match.groups()
        words = [w for line in body.splitlines() for w in [line.split("#", 1)[0].strip()] if w]
        arrays[name] = (arrays.get(name, []) if more else []) + words
    return _ARRAY_USE.sub(lambda m: " ".join(arrays.get(m.group(1), [m.group(0)])), text)

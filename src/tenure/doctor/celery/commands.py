"""How a worker's command line is written where the doctor reads it: a bash array of
arguments, worker lines gathered in a string the script `eval`s, and Django management
commands that start celery themselves (`manage.py run_celery_prod`)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable

from tenure.doctor.laravel.deploy import expand
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.walk import Tree, decode

Found = tuple[str, str | None, dict[str, str]]
Finder = Callable[[list[str]], Found | None]


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


def management_finder(tree: Tree, find: Finder) -> Finder:
    """`find`, and also `python manage.py NAME` where the project's management command NAME
    (`*/management/commands/NAME.py`) starts a celery worker with a command line it builds
    (`cmd = f"celery -A main worker -Q {queues} -l info"` then `subprocess.call(...)`)."""
    commands = _management_commands(tree)
    if not commands:
        return find

    def finder(argv: list[str]) -> Found | None:
        found = find(argv)
        if found is not None:
            return found
        tokens = expand(argv)
        for i, token in enumerate(tokens[:-1]):
            if os.path.basename(token) in ("manage.py", "django-admin"):
                command = commands.get(tokens[i + 1])
                return find(command) if command is not None else None
        return None

    return finder


def _management_commands(tree: Tree) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for found in tree.files["python"]:
        parts = found.rel.replace(os.sep, "/").split("/")
        if parts[-3:-1] != ["management", "commands"] or b"celery" not in found.data:
            continue
        text = decode(found)
        try:
            module = ast.parse(text) if isinstance(text, str) else None
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(module) if module is not None else []:
            line = _string(node)
            if line is not None and line.startswith("celery ") and " worker" in line:
                out[parts[-1].removesuffix(".py")] = split_command(line)
                break
    return out


def _string(node: ast.AST) -> str | None:
    """A string literal, or an f-string with each `{...}` written as a variable."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "$VALUE"
                       for v in node.values)  # fmt: skip
    return None

"""PHP through tree-sitter: parse a file once, and resolve the small expressions config files use.

Config values arrive as literals, `env('KEY', default)`, `(int) env(...)`, class constants,
`min(max(...))` and simple arithmetic (`60 * 5`). What can be resolved is resolved with the
place it came from; the rest is reported as unknown, never guessed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter_php
from tree_sitter import Language, Node, Parser

from tenure.doctor.model import Source
from tenure.doctor.walk import is_development_name

_PARSER: Parser | None = None
# Laravel's env() turns these strings into PHP values (Illuminate\Support\Env).
_ENV_WORDS: dict[str, object] = {
    "true": True,
    "(true)": True,
    "false": False,
    "(false)": False,
    "null": None,
    "(null)": None,
    "empty": "",
    "(empty)": "",
}
Scalar = int | float | str | bool | None


def parse(data: bytes) -> Node:
    """The syntax tree of a PHP file; tree-sitter recovers from errors, so this never raises."""
    global _PARSER
    if _PARSER is None:
        _PARSER = Parser(Language(tree_sitter_php.language_php()))
    return _PARSER.parse(data).root_node


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def line(node: Node) -> int:
    return node.start_point[0] + 1


def walk(
    node: Node, types: frozenset[str], *, into: frozenset[str] = frozenset()
) -> Iterator[Node]:
    """Every descendant of one of `types` (preorder); subtrees of `into` types are not entered."""
    stack = list(reversed(node.named_children))
    while stack:
        current = stack.pop()
        if current.type in types:
            yield current
        if current.type not in into:
            stack.extend(reversed(current.named_children))


def string_value(node: Node | None) -> str | None:
    """The value of a string literal without interpolation, else None."""
    if node is None or node.type not in ("string", "encapsed_string"):
        return None
    parts = []
    for child in node.named_children:
        if child.type == "string_content":
            parts.append(text(child))
        elif child.type == "escape_sequence":
            parts.append(text(child).encode().decode("unicode_escape", "replace"))
        else:
            return None  # an interpolated variable
    return "".join(parts)


def name_of(node: Node | None) -> str:
    """`\\Illuminate\\Support\\Facades\\Http` -> `Http`."""
    return text(node).rsplit("\\", 1)[-1]


def call_args(node: Node) -> list[Node]:
    arguments = node.child_by_field_name("arguments") or node.child_by_field_name("parameters")
    if arguments is None:
        return []
    return [
        a.named_children[-1]
        for a in arguments.named_children
        if a.type == "argument" and a.named_children
    ]


def array_items(node: Node) -> list[tuple[str | None, Node, int]]:
    """(key, value node, line) for each element of an array literal; key None when not a string."""
    items = []
    for element in node.named_children:
        if element.type != "array_element_initializer" or not element.named_children:
            continue
        children = element.named_children
        if len(children) >= 2:
            key_node = children[0]
            key = string_value(key_node)
            if key is None and key_node.type == "integer":
                key = text(key_node)
            items.append((key, children[-1], line(element)))
        else:
            items.append((None, children[0], line(element)))
    return items


def array_get(node: Node | None, key: str) -> Node | None:
    if node is None or node.type != "array_creation_expression":
        return None
    for item_key, value, _ in array_items(node):
        if item_key == key:
            return value
    return None


def returned_array(root: Node) -> Node | None:
    """The array a config file returns."""
    for statement in root.named_children:
        if statement.type == "return_statement" and statement.named_children:
            value = statement.named_children[0]
            return value if value.type == "array_creation_expression" else None
    return None


@dataclass(frozen=True)
class EnvEntry:
    value: str
    source: Source


class EnvFiles:
    """Every `.env*` file of the project, at any depth (`.env.docker`, `.env.example.sail`,
    `docker/.env.production`), each value with its line. env() resolves through them in the
    order Laravel's own loading makes likely: `.env`, `.env.production`, deployment variants,
    examples, and development or test variants last (ENV_RANK)."""

    def __init__(self, root: str, base: str) -> None:
        self.files: dict[str, dict[str, EnvEntry]] = {}
        for path in sorted(find_env_files(root), key=lambda p: env_rank(root, p)):
            if is_development_name(os.path.relpath(path, root)):
                continue  # a test or development environment is not the running configuration
            try:
                with open(path, encoding="utf-8-sig", errors="replace") as handle:
                    content = handle.read(1024 * 1024)
            except OSError:
                continue
            self.files[os.path.relpath(path, root)] = read_env(content, os.path.relpath(path, base))

    def add_written(self, sources: list[tuple[str, dict[str, EnvEntry]]]) -> None:
        """`.env` files deployment scripts write (written_env.py): the server's own `.env`,
        read before the repository's examples."""
        self.files = {**dict(sources), **self.files}

    def add_runtime(self, sources: list[tuple[str, dict[str, EnvEntry]]]) -> None:
        """Environments a deployment sets (Compose, Dockerfile ENV): they win over .env files,
        as real environment variables do in Laravel."""
        self.files = {**dict(sources), **self.files}

    def searched(self) -> str:
        return ", ".join(self.files) or "any .env file (none found)"

    def get(self, key: str) -> EnvEntry | None:
        for entries in self.files.values():
            if key in entries:
                return entries[key]
        return None


# Not the application's own settings: dependencies, runtime files, tests.
ENV_SKIP_DIRS = {"vendor", "node_modules", "storage", "tests", "test", ".git", "docs"}
ENV_MAX_DEPTH = 4


def find_env_files(root: str) -> list[str]:
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        depth = os.path.relpath(directory, root).count(os.sep)
        dirnames[:] = [
            d
            for d in dirnames
            if d not in ENV_SKIP_DIRS
            and depth < ENV_MAX_DEPTH
            and not os.path.islink(os.path.join(directory, d))
        ]
        found += [
            os.path.join(directory, n) for n in filenames if n == ".env" or n.startswith(".env.")
        ]
    return found


def env_rank(root: str, path: str) -> tuple[int, int, str]:
    rel = os.path.relpath(path, root)
    name = os.path.basename(path)
    depth = rel.count(os.sep)
    if is_development_name(rel):
        rank = 5
    elif name == ".env":
        rank = 0
    elif name == ".env.production":
        rank = 1
    elif "example" in name or "dist" in name or "sample" in name:
        rank = 3
    else:
        rank = 2  # a deployment variant: .env.docker, .env.prod
    return (rank, depth, rel)


def read_env(content: str, rel: str) -> dict[str, EnvEntry]:
    entries: dict[str, EnvEntry] = {}
    for number, raw in enumerate(content.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        key, _, value = stripped.removeprefix("export ").partition("=")
        value = value.strip()
        if value and value[0] in "'\"" and value[0] in value[1:]:
            value = value[1 : value.index(value[0], 1)]
        else:
            value = value.split(" #", 1)[0].strip()
        entries[key.strip()] = EnvEntry(value, Source(rel, number, f"{key.strip()}={value}"))
    return entries


@dataclass(frozen=True)
class Resolved:
    value: Scalar
    source: Source
    known: bool = True


class Evaluator:
    """Resolves config expressions in one file (`rel`), reading env() from the project's files."""

    def __init__(self, env: EnvFiles, rel: str, constants: dict[str, Node] | None = None) -> None:
        self.env = env
        self.rel = rel
        self.constants = constants or {}

    def unknown(self, node: Node, why: str = "") -> Resolved:
        return Resolved(
            None, Source(self.rel, line(node), why or f"cannot resolve {text(node)}"), known=False
        )

    def eval(self, node: Node, depth: int = 0) -> Resolved:
        here = Source(self.rel, line(node))
        kind = node.type
        if depth > 20:
            return self.unknown(node)
        if kind == "integer":
            try:
                return Resolved(int(text(node).replace("_", ""), 0), here)
            except ValueError:
                return self.unknown(node)
        if kind == "float":
            return Resolved(float(text(node).replace("_", "")), here)
        if kind in ("string", "encapsed_string"):
            value = string_value(node)
            return self.unknown(node) if value is None else Resolved(value, here)
        if kind == "boolean":
            return Resolved(text(node).lower() == "true", here)
        if kind == "null":
            return Resolved(None, here)
        if kind == "parenthesized_expression" and node.named_children:
            return self.eval(node.named_children[0], depth + 1)
        if kind == "cast_expression":
            return self._cast(node, depth)
        if kind == "unary_op_expression" and node.named_children:
            inner = self.eval(node.named_children[-1], depth + 1)
            if text(node).startswith("-") and isinstance(inner.value, int | float):
                return Resolved(-inner.value, inner.source, inner.known)
            return self.unknown(node)
        if kind == "binary_expression":
            return self._binary(node, depth)
        if kind == "conditional_expression":
            return self._conditional(node, depth)
        if kind == "function_call_expression":
            return self._call(node, depth)
        if kind == "class_constant_access_expression":
            target = self.constants.get(text(node.named_children[-1]))
            if target is not None and text(node.named_children[0]) in ("self", "static"):
                return self.eval(target, depth + 1)
        return self.unknown(node)

    def _cast(self, node: Node, depth: int) -> Resolved:
        inner = self.eval(node.named_children[-1], depth + 1)
        cast = text(node.child_by_field_name("type") or node.named_children[0]).lower()
        if not inner.known:
            return inner
        if cast in ("int", "integer"):
            number = as_number(inner.value)
            return Resolved(int(number) if number is not None else 0, inner.source)
        if cast in ("float", "double"):
            number = as_number(inner.value)
            return Resolved(number if number is not None else 0.0, inner.source)
        if cast == "string":
            return Resolved(str(inner.value), inner.source)
        return inner

    def _conditional(self, node: Node, depth: int) -> Resolved:
        """`cond ? a : b` and `a ?: b`: the branch the condition picks; with the condition
        unknown, the value both branches agree on, else unknown."""
        condition = node.child_by_field_name("condition")
        body = node.child_by_field_name("body")
        alternative = node.child_by_field_name("alternative")
        if condition is None or alternative is None:
            return self.unknown(node)
        test = self.eval(condition, depth + 1)
        if test.known:
            if test.value not in (None, "", False, 0, "0"):
                return test if body is None else self.eval(body, depth + 1)
            return self.eval(alternative, depth + 1)
        if body is None:  # `env('X') ?: 30`: X set nowhere the doctor sees, so the fallback
            return self._fallback(test, alternative, node, depth)
        a, b = self.eval(body, depth + 1), self.eval(alternative, depth + 1)
        if a.known and b.known and a.value == b.value:
            return a
        return self.unknown(node, f"depends on {text(condition)[:60]}")

    def _fallback(self, first: Resolved, other: Node, node: Node, depth: int) -> Resolved:
        """`env('X') ?? 30` with X set in no env file: 30, said to be the fallback; anything
        else unknown stays unknown."""
        if "is not set in" not in first.source.note:
            return self.unknown(node)
        fallback = self.eval(other, depth + 1)
        note = f"fallback of {text(node)[:60]}: {first.source.note}"
        return Resolved(fallback.value, Source(self.rel, line(node), note), fallback.known)

    def _binary(self, node: Node, depth: int) -> Resolved:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        operator = node.child_by_field_name("operator")
        if left is None or right is None or operator is None:
            return self.unknown(node)
        a, b = self.eval(left, depth + 1), self.eval(right, depth + 1)
        x, y = as_number(a.value), as_number(b.value)
        op = text(operator)
        if op in ("??", "?:") and not a.known:
            return self._fallback(a, right, node, depth)
        if op in ("??", "?:") and a.known:
            return (
                a
                if a.value not in (None, "", False, 0) or (op == "??" and a.value is not None)
                else b
            )
        if op in ("===", "==", "!==", "!=") and a.known and b.known:
            same = a.value == b.value if op in ("===", "!==") else str(a.value) == str(b.value)
            return Resolved(same == (op in ("===", "==")), a.source)
        if not (a.known and b.known) or x is None or y is None:
            return self.unknown(node)
        source = a.source if not a.source.is_default and a.source.note else b.source
        if op == "+":
            return Resolved(x + y, source)
        if op == "-":
            return Resolved(x - y, source)
        if op == "*":
            return Resolved(x * y, source)
        if op == "/" and y:
            return Resolved(x / y, source)
        return self.unknown(node)

    def _call(self, node: Node, depth: int) -> Resolved:
        name = name_of(node.child_by_field_name("function")).lower()
        args = call_args(node)
        if name == "env" and args:
            key = string_value(args[0])
            if key is None:
                return self.unknown(node)
            entry = self.env.get(key)
            if entry is not None:
                value = _ENV_WORDS.get(entry.value.lower(), entry.value)
                return Resolved(value, entry.source)  # type: ignore[arg-type]
            if len(args) < 2:
                return Resolved(
                    None,
                    Source(self.rel, line(node), f"{key} is not set in {self.env.searched()}"),
                    known=False,
                )
            fallback = self.eval(args[1], depth + 1)
            note = f"env('{key}') default; {key} is not set in {self.env.searched()}"
            return Resolved(fallback.value, Source(self.rel, line(node), note), fallback.known)
        if name in ("min", "max") and args:
            values = [self.eval(a, depth + 1) for a in args]
            numbers = [as_number(v.value) for v in values]
            if all(v.known for v in values) and all(n is not None for n in numbers):
                pick = (min if name == "min" else max)(
                    range(len(values)), key=lambda i: numbers[i] or 0
                )
                return Resolved(numbers[pick], values[pick].source)
        if name in ("intval", "floatval") and args:
            return self._cast_call(self.eval(args[0], depth + 1), name == "intval")
        return self.unknown(node)

    @staticmethod
    def _cast_call(inner: Resolved, integer: bool) -> Resolved:
        number = as_number(inner.value)
        if not inner.known or number is None:
            return inner
        return Resolved(int(number) if integer else number, inner.source)


def as_number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None

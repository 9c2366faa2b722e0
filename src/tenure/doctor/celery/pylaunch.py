"""Celery workers started from the project's own Python: a Django management command, a script
(`python scripts/worker.py`, `python -m app.worker`) or a console script of the project's
packaging (`augur backend start`) that runs `subprocess.Popen(["celery", "-A", app, "worker",
...])`, `os.system("celery ... worker ...")`, `app.worker_main([...])` or
`app.Worker(...).start()`. The unit that runs that command runs the worker: its grace and the
time-limit checks apply to it as to a `celery worker` written in the unit itself."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator

from tenure.doctor.laravel.deploy import SEPARATORS, expand
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.walk import Tree, decode

Found = tuple[str, str | None, dict[str, str]]
Finder = Callable[[list[str]], Found | None]
VALUE = "$VALUE"  # a part of the command the code computes
# `name = "pkg.module:function"` in [project.scripts], [tool.poetry.scripts], setup.cfg's
# console_scripts, or setup.py's entry_points strings ("name=pkg.module:function").
_ENTRY = re.compile(r"""["']?([\w.-]+)["']?\s*=\s*["']?([\w.]+):[\w.]+""")
_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")
_WRAPPERS = {"exec", "nohup", "uv", "run", "poetry", "pipenv", "--"}


class Launchers:
    """Each Python module of the project that starts a worker, with the command it runs, and
    the names a unit may use to run it (script path, dotted module, console script)."""

    def __init__(self, tree: Tree) -> None:
        self.modules: dict[str, list[str]] = {}  # rel path (with /) -> the worker's argv
        for found in tree.files["python"]:
            if b"celery" in found.data or b"worker_main" in found.data:
                text = decode(found)
                argv = worker_argv(text) if isinstance(text, str) else None
                if argv is not None:
                    self.modules[found.rel.replace(os.sep, "/")] = argv
        self.scripts = _console_scripts(tree.root) if self.modules else {}

    def words(self) -> set[str]:
        """Words a shell script or deployment file must contain to run one of the modules."""
        out = {os.path.basename(p).removesuffix(".py") for p in self.modules}
        return out | set(self.scripts)

    def finder(self, find: Finder) -> Finder:
        if not self.modules:
            return find

        def finder(argv: list[str]) -> Found | None:
            found = find(argv)
            if found is not None:
                return found
            command = self.command(expand(argv))
            return find(command) if command is not None else None

        return finder

    def command(self, tokens: list[str]) -> list[str] | None:
        for i, token in enumerate(tokens):
            name = os.path.basename(token)
            following = tokens[i + 1] if i + 1 < len(tokens) else ""
            if name in ("manage.py", "django-admin") and following:
                hit = self._suffix(f"management/commands/{following}.py")
            elif token.endswith(".py"):
                hit = self._suffix(token.lstrip("./"))
            elif token == "-m" and following:
                hit = self._suffix(following.replace(".", "/") + ".py")
            elif token in self.scripts and _command_position(tokens[:i]):
                hit = self._console(self.scripts[token], following)
            else:
                continue
            if hit is not None:
                return hit
        return None

    def _suffix(self, path: str) -> list[str] | None:
        for rel, argv in self.modules.items():
            if rel == path or rel.endswith("/" + path):
                return argv
        return None

    def _console(self, module: str, sub: str) -> list[str] | None:
        """The entry point's module, or, for a command group that loads each sub-command from
        a module of its own folder (click's "multi command" folder, `augur backend` ->
        cli/backend.py), the module named by the first argument."""
        path = module.replace(".", "/")
        found = self._suffix(path + ".py") or self._suffix(path + "/__init__.py")
        if found is None and sub and re.fullmatch(r"[\w-]+", sub):
            found = self._suffix(f"{os.path.dirname(path)}/{sub.replace('-', '_')}.py")
        return found


def _command_position(prefix: list[str]) -> bool:
    """The console script is the command run (first word, or after `exec`, `uv run`, `&&`)."""
    start = max((i + 1 for i, t in enumerate(prefix) if t in SEPARATORS), default=0)
    return all(t in _WRAPPERS or "=" in t for t in prefix[start:])


def _console_scripts(root: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in _PACKAGING:
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as handle:
                text = handle.read(200_000)
        except OSError:
            continue
        for section in _script_sections(name, text):
            for match in _ENTRY.finditer(section):
                out.setdefault(match.group(1), match.group(2))
    return out


def _script_sections(name: str, text: str) -> Iterator[str]:
    if name == "pyproject.toml":
        for match in re.finditer(r"^\[(?:project|tool\.poetry)\.scripts\]\n(.*?)(?=^\[|\Z)",
                                 text, re.MULTILINE | re.DOTALL):  # fmt: skip
            yield match.group(1)
    elif "console_scripts" in text:
        yield text[text.index("console_scripts") :][:5000]


def worker_argv(text: str) -> list[str] | None:
    """The first worker command the module runs; one serving every queue (no -Q) when it
    starts several, since that one runs the tasks no queue is routed to."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    # A docstring or bare string ("run: celery -A proj worker") says how to start; it runs nothing.
    said = {id(n.value) for n in ast.walk(module)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}  # fmt: skip
    found = [argv for node in ast.walk(module) if id(node) not in said
             for argv in [_launch(node)] if argv is not None]  # fmt: skip
    unqueued = [a for a in found if not any(t.startswith(("-Q", "--queues")) for t in a)]
    return next(iter(unqueued or found), None)


def _launch(node: ast.AST) -> list[str] | None:
    line = _string(node)
    if line is not None:
        words = split_command(line) if line.startswith("celery ") else []
        return words if "worker" in words else None
    if isinstance(node, ast.List | ast.Tuple):
        words = [_string(e) or VALUE for e in node.elts]
        if words and os.path.basename(words[0]) == "celery" and "worker" in words:
            return words
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _api_launch(node)
    return None


def _api_launch(call: ast.Call) -> list[str] | None:
    func = call.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "worker_main":
        # app.worker_main(argv=["worker", "--loglevel=INFO"]): the celery command's argv.
        given = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "argv"), None)  # fmt: skip
        words = [_string(e) or VALUE for e in getattr(given, "elts", [])]
        return ["celery", *([] if "worker" in words else ["worker"]), *words]
    inner = func.value
    if func.attr == "start" and isinstance(inner, ast.Call):
        made = inner.func
        if isinstance(made, ast.Attribute) and made.attr == "Worker":
            # app.Worker(concurrency=2, loglevel="INFO").start(): options by keyword.
            return ["celery", "worker", *_keyword_options(inner)]
    return None


def _keyword_options(call: ast.Call) -> list[str]:
    out = []
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        value = keyword.value
        text = str(value.value) if isinstance(value, ast.Constant) else VALUE
        out.append(f"--{keyword.arg.replace('_', '-')}={text}")
    return out


def _string(node: ast.AST) -> str | None:
    """A string literal, or an f-string with each `{...}` written as a variable."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else VALUE
                       for v in node.values)  # fmt: skip
    return None

"""What a called name in a project's code stands for: the project's modules by dotted name,
their imports (absolute, relative, `*`), names a package re-exports (`from .etl import f` in
`__init__.py`), classes and the methods they inherit from project-local bases. reach.py walks
from Celery tasks through what this resolves.
"""

from __future__ import annotations

import ast
import os
from typing import NamedTuple

from tenure.doctor.astutil import FunctionNode, Module
from tenure.doctor.walk import FoundFile

HOPS = 4  # re-exports followed for one name (`pkg` -> `pkg.sub` -> `pkg.sub.etl`); also bases


class Target(NamedTuple):
    """A project function a call runs: where it is written, and for a method the class
    `self` is an instance of (`owner`, in `home`) and the class that defines it (`label`)."""

    fn: FunctionNode
    module: Module
    owner: ast.ClassDef | None = None
    home: Module | None = None
    label: str = ""


class Project:
    """The project's Python modules by dotted name, parsed when first needed."""

    def __init__(self, files: list[FoundFile], base: str) -> None:
        self.base = base
        self.files: dict[str, FoundFile] = {}
        self.names: dict[str, str] = {}  # a file's rel -> its dotted name
        self._parsed: dict[str, Module | None] = {}
        self.stars: dict[str, list[str]] = {}  # a module's path -> what it imports with *
        for found in files:
            rel = os.path.relpath(found.path, base)
            parts = _importable(rel)
            if not parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            # Every suffix names the module: `src/app/etl.py` is imported as `app.etl`.
            for start in range(len(parts)):
                self.files.setdefault(".".join(parts[start:]), found)
            self.names[rel] = ".".join(parts)

    def module(self, dotted: str) -> Module | None:
        found = self.files.get(dotted)
        if found is None:
            return None
        key = found.path
        if key not in self._parsed:
            try:
                rel = os.path.relpath(found.path, self.base)
                self._parsed[key] = Module.parse(found.path, rel, found.data)
                parsed = self._parsed[key]
                assert parsed is not None
                self.stars[key] = _relative_imports(parsed, self.names.get(rel, ""), rel)
            except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
                self._parsed[key] = None
        return self._parsed[key]

    def split(self, dotted: str) -> tuple[Module, list[str]] | None:
        """`pkg.etl.xpro.extract` -> (the pkg/etl/xpro.py module, ["extract"])."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.module(".".join(parts[:cut]))
            if module is not None:
                return module, parts[cut:]
        return None


def _importable(rel: str) -> list[str]:
    """The dotted parts a file is imported by: the trailing run of identifiers in its path.
    A source root inside a directory no import can name (`qgis-app/plugins/utils.py`, run
    with `qgis-app` on sys.path) still names its modules `plugins.utils`."""
    parts = rel[:-3].split(os.sep) if rel.endswith(".py") else []
    if not parts or not parts[-1].isidentifier():
        return []
    start = len(parts)
    while start > 0 and parts[start - 1].isidentifier():
        start -= 1
    return parts[start:]


def _relative_imports(module: Module, dotted: str, rel: str) -> list[str]:
    """`from .utils import f`, `from . import xpro`: Module.parse leaves them out. Returns
    the modules imported with `from x import *`, whose names the module then has."""
    package = dotted.split(".") if rel.endswith("__init__.py") else dotted.split(".")[:-1]
    stars: list[str] = []
    for node in module.nodes():
        if not isinstance(node, ast.ImportFrom):
            continue
        prefix = node.module or ""
        if node.level > 0:
            up = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            prefix = ".".join([*up, *([node.module] if node.module else [])])
        for alias in node.names:
            if alias.name == "*":
                stars.append(prefix)
            elif node.level > 0:
                module.aliases.setdefault(alias.asname or alias.name, f"{prefix}.{alias.name}")
    return stars


class Names:
    """Resolves dotted names as seen from a module to the project functions they run."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.not_followed: set[tuple[str, int]] = set()

    def locate(self, dotted: str, module: Module, hops: int = 0) -> tuple[Module, list[str]] | None:
        """The module that defines a dotted name and the rest of the name in it. A name the
        module only imports (a package's `from .etl import f`, `from .x import *`) is
        followed to where it is defined."""
        head = dotted.split(".")
        if _defines(module, head[0]):
            where, rest = module, head
        else:
            star = self._star(head[0], module) if head[0] not in module.aliases else None
            split = (star, head) if star is not None else self.project.split(dotted)
            if split is None:
                return None  # a library's, or a local variable's method: not project code
            where, rest = split
        if rest and not _defines(where, rest[0]) and hops < HOPS:
            if rest[0] in where.aliases and where.aliases[rest[0]] != rest[0]:
                again = ".".join([where.aliases[rest[0]], *rest[1:]])
                return self.locate(again, where, hops + 1) or (where, rest)
            star = self._star(rest[0], where)
            if star is not None and star is not where:
                return self.locate(".".join(rest), star, hops + 1) or (where, rest)
        return where, rest

    def member(self, dotted: str, module: Module, func: ast.expr) -> list[Target]:
        """A dotted name as seen from `module`: its own function or class, or one imported."""
        located = self.locate(dotted, module)
        if located is None:
            return []
        where, rest = located
        if len(rest) == 1 and rest[0] in where.functions:
            return [Target(where.functions[rest[0]], where, label=rest[0])]
        made = made_by(where.tree.body, rest[0]) if len(rest) == 1 else None
        if made is not None:
            return self.composed(made, where)
        classes = _classes(where)
        if rest and rest[0] in classes:
            cls = classes[rest[0]]
            name = rest[1] if len(rest) == 2 else "__init__" if len(rest) == 1 else None
            found = self.method(cls, where, name) if name else None
            if found is not None:
                return [found]
            if len(rest) == 1:
                return []  # a class with no __init__ of its own: nothing to run
        instance = self._instance(where, rest[0]) if len(rest) == 2 else None
        if instance is not None:  # storage = AwsStorage() at module level; storage.fetch_url()
            found = self.method(*instance, rest[1])
            if found is not None:
                return [found]
        # A project name that is no function here (made at run time), or a method of a base
        # class outside the project: not followed. `Model.objects.filter()`, `logger.info()`
        # call a library through a project object: not the project's code, not counted.
        if len(rest) == 1 or (len(rest) == 2 and rest[0] in classes):
            self.not_followed.add((module.rel, getattr(func, "lineno", 0)))
        return []

    def method(self, cls: ast.ClassDef, home: Module, name: str) -> Target | None:
        """`name` as an instance of `cls` runs it: the class's own, else the first base (in
        the order Python looks) that defines it, bases followed into other modules."""
        for current, where in self.lineage(cls, home):
            found = method_node(current, name)
            if found is not None:
                return Target(found, where, cls, home, f"{current.name}.{name}")
        return None

    def cls(self, dotted: str, module: Module) -> tuple[ast.ClassDef, Module] | None:
        """The project class a dotted name, as seen from `module`, stands for."""
        located = self.locate(dotted, module)
        if located is None or len(located[1]) != 1:
            return None
        found = _classes(located[0]).get(located[1][0])
        return (found, located[0]) if found is not None else None

    def related(
        self, cls: ast.ClassDef, home: Module, field: str
    ) -> tuple[ast.ClassDef, Module] | None:
        """The model a relation field points to: `installation = models.ForeignKey(
        GitHubInstallation, ...)` (or `"GitHubInstallation"`, `"app.Model"`) on the class or
        a project base."""
        for current, where in self.lineage(cls, home):
            for item in current.body:
                to = _relation_target(item, field)
                if isinstance(to, ast.Constant) and isinstance(to.value, str):
                    name = to.value.rsplit(".", 1)[-1]
                    if name == "self":
                        return current, where
                    local = _classes(where).get(name)
                    return (local, where) if local is not None else self.cls(name, where)
                dotted = where.qualify(to) if isinstance(to, ast.Name | ast.Attribute) else None
                if dotted:
                    return self.cls(dotted, where)
        return None

    def _instance(self, where: Module, name: str) -> tuple[ast.ClassDef, Module] | None:
        """The project class of a module-level instance: `storage = AwsStorage()`."""
        made = where.constants.get(name)
        dotted = where.qualify(made.func) if isinstance(made, ast.Call) else None
        return self.cls(dotted, where) if dotted else None

    def lineage(self, cls: ast.ClassDef, home: Module) -> list[tuple[ast.ClassDef, Module]]:
        """The class and its project-local bases, nearest first (breadth first, a few deep)."""
        out: list[tuple[ast.ClassDef, Module]] = []
        todo = [(cls, home, 0)]
        seen: set[int] = set()
        while todo:
            current, where, depth = todo.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            out.append((current, where))
            if depth < HOPS:
                todo += [(*base, depth + 1) for base in self._bases(current, where)]
        return out

    def _bases(self, cls: ast.ClassDef, module: Module) -> list[tuple[ast.ClassDef, Module]]:
        out: list[tuple[ast.ClassDef, Module]] = []
        for base in cls.bases:
            dotted = module.qualify(base)
            located = self.locate(dotted, module) if dotted else None
            if located is not None and len(located[1]) == 1:
                found = _classes(located[0]).get(located[1][0])
                if found is not None:
                    out.append((found, located[0]))
        return out

    def composed(self, made: ast.Call, where: Module) -> list[Target]:
        """A name bound to a call's result, then called: `etl = compose(load, xpro.extract)`
        runs the functions it was composed of; `extract, _ = factory(config)` runs what the
        factory defines (its nested functions are read with it)."""
        out: list[Target] = []
        for part in (made.func, *made.args):
            if isinstance(part, ast.Name | ast.Attribute):
                dotted = where.qualify(part)
                if dotted:
                    out += self.member(dotted, where, part)
        return out

    def _star(self, name: str, module: Module) -> Module | None:
        """The module a name came from through `from x import *`, if any."""
        for dotted in self.project.stars.get(module.path, []):
            source = self.project.module(dotted)
            if source is not None and (_defines(source, name) or name in source.aliases):
                return source
        return None


def _defines(module: Module, name: str) -> bool:
    return (
        name in module.functions or name in _classes(module) or name in module.constants
    ) and name not in module.aliases


def method_node(cls: ast.ClassDef, name: str) -> FunctionNode | None:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
            return item
    return None


def _classes(module: Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in module.tree.body if isinstance(n, ast.ClassDef)}


def made_by(nodes: list[ast.stmt] | list[ast.AST], name: str) -> ast.Call | None:
    """The call whose result `name` is bound to: `name = f(...)`, `name, other = f(...)`."""
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            if isinstance(node.value, ast.Call) and any(
                isinstance(n, ast.Name) and n.id == name for n in names
            ):
                return node.value
    return None


RELATIONS = ("ForeignKey", "OneToOneField")


def _relation_target(item: ast.stmt, field: str) -> ast.expr | None:
    """What `field = models.ForeignKey(Target, ...)` in a class body points to."""
    if not (
        isinstance(item, ast.Assign)
        and len(item.targets) == 1
        and isinstance(item.targets[0], ast.Name)
        and item.targets[0].id == field
        and isinstance(item.value, ast.Call)
    ):
        return None
    call, func = item.value, item.value.func
    kind = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if kind not in RELATIONS:
        return None
    given = [k.value for k in call.keywords if k.arg == "to"]
    return call.args[0] if call.args else given[0] if given else None

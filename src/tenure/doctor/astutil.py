"""Small AST helpers shared by the code checks: parsed modules, imports, constants."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from datetime import timedelta

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_TIMEDELTA_UNITS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds")


@dataclass
class Module:
    path: str  # absolute
    rel: str  # as shown
    tree: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted import
    constants: dict[str, ast.expr] = field(default_factory=dict)  # module-level NAME = expr
    functions: dict[str, FunctionNode] = field(default_factory=dict)  # module-level defs
    # ast.walk is most of the doctor's time on a big tree: walk each subtree once, keep it.
    _nodes: dict[int, list[ast.AST]] = field(default_factory=dict, repr=False)
    _helpers: dict[int, list[FunctionNode]] = field(default_factory=dict, repr=False)

    def nodes(self, root: ast.AST | None = None) -> list[ast.AST]:
        """Every node under `root` (default: the whole module), walked once and remembered."""
        root = self.tree if root is None else root
        found = self._nodes.get(id(root))
        if found is None:
            found = self._nodes[id(root)] = list(ast.walk(root))
        return found

    @classmethod
    def parse(cls, path: str, rel: str, source: bytes) -> Module:
        """Raises SyntaxError, ValueError (NUL bytes) or UnicodeDecodeError."""
        tree = ast.parse(source, filename=rel)
        module = cls(path, rel, tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    module.constants[target.id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                module.constants[node.target.id] = node.value
        for imported in module.nodes():
            if isinstance(imported, ast.Import):
                for alias in imported.names:
                    local = alias.asname or alias.name.split(".")[0]
                    module.aliases[local] = alias.name if alias.asname else local
            elif isinstance(imported, ast.ImportFrom) and imported.module and imported.level == 0:
                for alias in imported.names:
                    module.aliases[alias.asname or alias.name] = f"{imported.module}.{alias.name}"
        return module

    def qualify(self, expr: ast.expr) -> str | None:
        """`rq.get` -> "requests.get" when `import requests as rq`; None if not a dotted name."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self.aliases.get(expr.id, expr.id)
        return ".".join([base, *reversed(parts)])


@dataclass(frozen=True)
class Num:
    """A resolved number of seconds; `value` None is an explicit None (no limit)."""

    value: float | None


def number(expr: ast.expr | None, module: Module, depth: int = 0) -> Num | None:
    """The number an expression stands for, following module constants; None: cannot tell."""
    if expr is None or depth > 5:
        return None
    if isinstance(expr, ast.Constant):
        if expr.value is None:
            return Num(None)
        if isinstance(expr.value, int | float) and not isinstance(expr.value, bool):
            return Num(float(expr.value))
        return None
    if isinstance(expr, ast.Name) and expr.id in module.constants:
        return number(module.constants[expr.id], module, depth + 1)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = number(expr.operand, module, depth + 1)
        return Num(-inner.value) if inner and inner.value is not None else None
    if isinstance(expr, ast.BinOp):
        left, right = number(expr.left, module, depth + 1), number(expr.right, module, depth + 1)
        if left is None or right is None or left.value is None or right.value is None:
            return None
        ops = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__}
        op = ops.get(type(expr.op))
        if op is not None:
            return Num(op(left.value, right.value))
        if isinstance(expr.op, ast.Div) and right.value:
            return Num(left.value / right.value)
        return None
    if isinstance(expr, ast.Call) and (module.qualify(expr.func) or "").endswith("timedelta"):
        return _timedelta(expr, module, depth)
    return None


def _timedelta(call: ast.Call, module: Module, depth: int) -> Num | None:
    parts: dict[str, float] = {}
    for unit, arg in zip(("days", "seconds"), call.args, strict=False):
        value = number(arg, module, depth + 1)
        if value is None or value.value is None:
            return None
        parts[unit] = value.value
    for keyword in call.keywords:
        if keyword.arg not in _TIMEDELTA_UNITS:
            return None
        value = number(keyword.value, module, depth + 1)
        if value is None or value.value is None:
            return None
        parts[keyword.arg] = value.value
    return Num(timedelta(**parts).total_seconds())


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def has_star_kwargs(call: ast.Call) -> bool:
    return any(k.arg is None for k in call.keywords)


def called_helpers(function: FunctionNode, module: Module, depth: int = 3) -> list[FunctionNode]:
    """The function and the module-level functions it calls by name, a few levels deep:
    a job's HTTP call often sits in a helper in the same file."""
    cached = module._helpers.get(id(function))
    if cached is None:
        cached = module._helpers[id(function)] = _called_helpers(function, module, depth)
    return cached


def _called_helpers(function: FunctionNode, module: Module, depth: int) -> list[FunctionNode]:
    seen: dict[str, FunctionNode] = {}
    todo: list[tuple[FunctionNode, int]] = [(function, 0)]
    out: list[FunctionNode] = []
    while todo:
        current, level = todo.pop()
        out.append(current)
        if level >= depth:
            continue
        for node in module.nodes(current):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                helper = module.functions.get(node.func.id)
                if helper is not None and helper is not function and node.func.id not in seen:
                    seen[node.func.id] = helper
                    todo.append((helper, level + 1))
    return out


def sleeps_in_loops(fn: FunctionNode, module: Module) -> list[ast.Call]:
    """The first `time.sleep(...)` of each loop in `fn` that is not a loop of attempts: a
    sleep counts for its innermost loop only (a retry's back-off inside a walk over items is
    the retry's)."""
    out: dict[int, ast.Call] = {}
    for loop in module.nodes(fn):
        if not isinstance(loop, LOOPS) or _attempts(loop):
            continue
        for node in _inner(loop):
            if isinstance(node, ast.Call) and module.qualify(node.func) == "time.sleep":
                out.setdefault(id(node), node)
                break
    return sorted(out.values(), key=lambda n: n.lineno)


LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _inner(loop: ast.AST) -> list[ast.AST]:
    """The nodes of a loop's body that no nested loop or function holds."""
    out: list[ast.AST] = []
    todo = [*ast.iter_child_nodes(loop)]
    while todo:
        node = todo.pop(0)
        out.append(node)
        if not isinstance(node, (*LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _attempts(loop: ast.For | ast.While | ast.AsyncFor) -> bool:
    """A loop of a few tries (`for attempt in range(5)`, `while retries < max_retries`): its
    sleep is a retry's back-off, bounded by the count, not a wait or a pace per item. A range
    over a length (`range(0, len(agents), 40)`) walks items and is not one."""
    if isinstance(loop, ast.While):
        test = loop.test
        return (
            isinstance(test, ast.Compare)
            and all(isinstance(op, ast.Lt | ast.LtE) for op in test.ops)
            and not any(isinstance(n, ast.Call) for n in ast.walk(test))
        )
    it = loop.iter
    return (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and not any(isinstance(n, ast.Call) for a in it.args for n in ast.walk(a))
    )

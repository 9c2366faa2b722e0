"""The least a time limit can be when it is computed where the task is sent: `soft_time_limit=
time_limit` with `time_limit = phase.execution_time_limit + time_padding` and `time_padding =
60 * 20` earlier in the same function is at least 1200 s, whatever the model's field holds
(durations are not negative). Only sums are bounded so: a product, a difference or a call of
an unknown part says nothing."""

from __future__ import annotations

import ast

from tenure.doctor.celery.values import UNKNOWN, Scope, evaluate

DEPTH = 4


def local_assignments(tree: ast.AST) -> dict[int, dict[str, ast.expr]]:
    """id(call) -> the names its enclosing function binds once by plain assignment."""
    out: dict[int, dict[str, ast.expr]] = {}
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound: dict[str, ast.expr] = {}
        twice: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    if target.id in bound:  # rebound: which value reaches the call is unknown
                        twice.add(target.id)
                    bound[target.id] = node.value
        names = {k: v for k, v in bound.items() if k not in twice}
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                out[id(node)] = names
    return out


def floor(node: ast.expr, names: dict[str, ast.expr], scope: Scope, depth: int = 0) -> float:
    """The least value of `node` (0 when nothing is known of it)."""
    if depth > DEPTH:
        return 0.0
    if isinstance(node, ast.Name) and node.id in names:
        return floor(names[node.id], names, scope, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = floor(node.left, names, scope, depth + 1)
        return left + floor(node.right, names, scope, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        factors = (_known(node.left, names, scope, depth), _known(node.right, names, scope, depth))
        return factors[0] * factors[1] if factors[0] is not None and factors[1] is not None else 0.0
    known = _known(node, names, scope, depth)
    return known if known is not None else 0.0  # an unknown duration is at least 0


def _known(node: ast.expr, names: dict[str, ast.expr], scope: Scope, depth: int) -> float | None:
    if isinstance(node, ast.Name) and node.id in names and depth <= DEPTH:
        return _known(names[node.id], names, scope, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Add):
        left = _known(node.left, names, scope, depth + 1)
        right = _known(node.right, names, scope, depth + 1)
        if left is None or right is None:
            return None
        return left * right if isinstance(node.op, ast.Mult) else left + right
    value = evaluate(node, scope)
    if value is UNKNOWN or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)

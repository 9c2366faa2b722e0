"""Countdowns that grow with a loop: `for index, item in enumerate(items):` sending each item
`countdown=index * delay` spreads the sends over the whole list, so the last one waits as long
as the list is long. No cap (`min(...)`) and no division by the list's length (a stagger over a
fixed period) means some list is long enough to pass the broker's visibility timeout."""

from __future__ import annotations

import ast


def growing_delays(tree: ast.AST) -> dict[int, str]:
    """id() of each countdown/eta expression that grows with an enumerate() index -> the
    product that makes it grow (`index * delay_between_jobs`)."""
    found: dict[int, str] = {}
    for loop in ast.walk(tree):
        index = _enumerate_index(loop)
        if index is None:
            continue
        assert isinstance(loop, ast.For)
        local: dict[str, ast.expr] = {}
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    local[target.id] = node.value
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg not in ("countdown", "eta"):
                        continue
                    value = keyword.value
                    if isinstance(value, ast.Name) and value.id in local:
                        value = local[value.id]
                    product = _index_product(value, index)
                    if product:
                        found[id(keyword.value)] = product
    return found


def _enumerate_index(node: ast.AST) -> str | None:
    if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)):
        return None
    if getattr(node.iter.func, "id", "") != "enumerate" or len(node.iter.args) != 1:
        return None
    target = node.target
    if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


def _index_product(node: ast.expr, index: str) -> str:
    """`index * d` inside the expression (or a conditional around it), when nothing caps it."""
    if any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "min" for n in ast.walk(node)):
        return ""
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div | ast.FloorDiv | ast.Mod)
           for n in ast.walk(node)):  # fmt: skip
        return ""  # a stagger over a fixed period (i / len(items) * period), or a bucket
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            sides = (n.left, n.right)
            if any(isinstance(s, ast.Name) and s.id == index for s in sides):
                return ast.unparse(n)
    return ""

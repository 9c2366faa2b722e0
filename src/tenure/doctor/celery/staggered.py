"""Countdowns that grow with a loop: `for index, item in enumerate(items):
task.apply_async(countdown=index * step)` staggers a fan-out, and the last message waits
len(items) x step seconds. Nothing caps the number of items, so past some count the waiting
messages outlive the broker's visibility timeout and are delivered again."""

from __future__ import annotations

import ast


def growing_delays(tree: ast.AST) -> set[int]:
    """Lines of apply_async/signature calls whose countdown/eta is a multiple of a loop's
    enumerate() counter (directly or through a name assigned in the loop), with no min() cap."""
    lines: set[int] = set()
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.AsyncFor):
            continue
        counter = _enumerate_counter(loop)
        if counter is None:
            continue
        grown = {counter}
        for node in ast.walk(loop):
            if isinstance(node, ast.Assign) and _multiplies(node.value, grown):
                grown |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(loop):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("apply_async", "signature", "s", "set")):  # fmt: skip
                continue
            for keyword in node.keywords:
                if keyword.arg in ("countdown", "eta") and _grows(keyword.value, grown):
                    lines.add(node.lineno)
    return lines


def _enumerate_counter(loop: ast.For | ast.AsyncFor) -> str | None:
    call = loop.iter
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "enumerate"):
        return None
    target = loop.target
    if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


def _capped(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("min", "clamp")
        for n in ast.walk(node)
    )


def _multiplies(node: ast.AST, names: set[str]) -> bool:
    """`index * step` (or `step * index`, inside a conditional expression or a sum)."""
    if _capped(node):
        return False
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mult)
        and any(isinstance(side, ast.Name) and side.id in names for side in (n.left, n.right))
        for n in ast.walk(node)
    )


def _grows(node: ast.AST, grown: set[str]) -> bool:
    """`countdown=countdown` (a name grown in the loop), `countdown=index * step`."""
    if _capped(node):
        return False
    return any(isinstance(n, ast.Name) and n.id in grown for n in ast.walk(node))

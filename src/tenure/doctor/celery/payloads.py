"""payload-blob for Celery: a task sent file contents as its argument
(`process_mbox_file_task.delay(file.read(), ...)`, or `content = upload.read()` first and
`.delay(content)`). The broker keeps the whole message, with every retry and redelivery;
a mailbox export or an upload is routinely hundreds of MB. Only the project's own tasks
count, by the name they are defined under."""

from __future__ import annotations

import ast

from tenure.doctor.astutil import Module
from tenure.doctor.model import Finding, Source
from tenure.doctor.rules import finding
from tenure.doctor.walk import FoundFile

SENDS = ("delay", "apply_async", "s", "si", "signature")
# Calls whose result is a file's contents.
BLOB_CALLS = {"read", "read_text", "read_bytes", "getvalue", "readlines"}
MARKERS = (b".delay(", b".apply_async(", b".s(", b".si(")


def check_payloads(files: list[FoundFile], tasks: set[str]) -> list[Finding]:
    out: list[Finding] = []
    for found in files if tasks else []:
        if not any(m in found.data for m in MARKERS):
            continue
        try:
            module = Module.parse(found.path, found.rel, found.data)
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
            continue
        out += _in_module(module, tasks)
    return out


def _in_module(module: Module, tasks: set[str]) -> list[Finding]:
    out: dict[int, Finding] = {}
    for fn in module.nodes():
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bound = _bound_blobs(fn, module)
        for node in module.nodes(fn):
            sent = _sent_task(node, tasks)
            if sent is None or id(node) in out:
                continue
            assert isinstance(node, ast.Call)
            for arg in _arguments(node):
                what = _blob(arg, bound)
                if what is not None:
                    out[id(node)] = _finding(module, node, sent, what)
                    break
    return list(out.values())


def _sent_task(node: ast.AST, tasks: set[str]) -> str | None:
    """`task.delay(...)`, `tasks.task.apply_async(...)`: the project task's name."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in SENDS:
        return None
    target = node.func.value
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name if name in tasks else None


def _arguments(call: ast.Call) -> list[ast.expr]:
    """What travels in the message: `.delay(a, b=c)`'s arguments; `.apply_async`'s `args`
    and `kwargs` (positional or by keyword)."""
    assert isinstance(call.func, ast.Attribute)
    if call.func.attr != "apply_async":
        return [*call.args, *(k.value for k in call.keywords)]
    out: list[ast.expr] = []
    given = [*call.args[:2], *(k.value for k in call.keywords if k.arg in ("args", "kwargs"))]
    for value in given:
        if isinstance(value, ast.List | ast.Tuple):
            out += value.elts
        elif isinstance(value, ast.Dict):
            out += value.values
    return out


def _bound_blobs(fn: ast.AST, module: Module) -> dict[str, str]:
    """Names the function binds to file contents: `file_content = file.read()`."""
    out: dict[str, str] = {}
    for node in module.nodes(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            what = _blob(node.value, {})
            if isinstance(target, ast.Name) and what is not None:
                out[target.id] = what
    return out


def _blob(arg: ast.expr, bound: dict[str, str]) -> str | None:
    if isinstance(arg, ast.Name):
        return bound.get(arg.id)
    func = arg.func if isinstance(arg, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in BLOB_CALLS:
        return f"file contents ({ast.unparse(arg)})"
    return None


def _finding(module: Module, call: ast.Call, task: str, what: str) -> Finding:
    assert isinstance(call.func, ast.Attribute)
    written = ast.unparse(call.func)
    return finding(
        "payload-blob",
        f"{written}(...) sends {what} to Celery task '{task}': the broker holds the whole "
        "message, with every retry and redelivery, and a large file fails or stalls the queue.",
        "store the contents (object storage, a table) and send the task its key or id",
        # The callee's line: where `.delay(` is written, also when arguments wrap.
        Source(module.rel, call.func.end_lineno or call.lineno),
    )

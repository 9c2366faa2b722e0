"""Blocking calls in async jobs: `time.sleep`, `requests.get`, `subprocess.run` and the like
block the event loop. `asyncio.timeout` can only cancel at an `await`, so the job's timeout does
not interrupt them (a `time.sleep(6)` under `timeout=2` used to end as "succeeded after 6.06 s"),
and every other coroutine on the loop stalls with it."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tenure.doctor.astutil import FunctionNode, Module, called_helpers
from tenure.doctor.model import Finding, JobModel, Source
from tenure.doctor.rules import finding

# Qualified names of blocking calls, and what to await instead.
BLOCKING = {
    "time.sleep": "await asyncio.sleep(...)",
    "subprocess.run": "await asyncio.create_subprocess_exec(...)",
    "subprocess.call": "await asyncio.create_subprocess_exec(...)",
    "subprocess.check_call": "await asyncio.create_subprocess_exec(...)",
    "subprocess.check_output": "await asyncio.create_subprocess_exec(...)",
    "os.system": "await asyncio.create_subprocess_shell(...)",
    "urllib.request.urlopen": "an async client (httpx.AsyncClient, aiohttp)",
    "socket.create_connection": "await asyncio.open_connection(...)",
    "smtplib.SMTP": "aiosmtplib, or await asyncio.to_thread(...)",
    "smtplib.SMTP_SSL": "aiosmtplib, or await asyncio.to_thread(...)",
    "psycopg.connect": "await psycopg.AsyncConnection.connect(...)",
    "psycopg2.connect": "an async driver, or await asyncio.to_thread(...)",
}
REQUESTS = {"get", "post", "put", "patch", "delete", "head", "options", "request"}
HTTPX = REQUESTS | {"stream"}


def blocking_name(qualified: str | None) -> tuple[str, str] | None:
    """(call, what to use instead) when `qualified` names a blocking call."""
    if qualified is None:
        return None
    if qualified in BLOCKING:
        return qualified, BLOCKING[qualified]
    module, _, name = qualified.rpartition(".")
    if module == "requests" and name in REQUESTS:
        return qualified, "httpx.AsyncClient (await client.get(...))"
    if module == "httpx" and name in HTTPX:
        return qualified, "httpx.AsyncClient (await client.get(...))"
    return None


def check_async_job(model: JobModel, function: FunctionNode, module: Module) -> list[Finding]:
    if not isinstance(function, ast.AsyncFunctionDef):
        return []
    out: list[Finding] = []
    seen: set[int] = set()
    for fn in called_helpers(function, module):
        if fn is not function and isinstance(fn, ast.AsyncFunctionDef):
            continue  # an async helper is checked as code of its own, awaited on the loop
        for call in _calls(fn):
            hit = blocking_name(module.qualify(call.func))
            if hit is None or call.lineno in seen:
                continue
            seen.add(call.lineno)
            where = "" if fn is function else f" (in {fn.name}())"
            out.append(finding(
                "async-blocking-call",
                f"async job '{model.name}' calls {hit[0]}(){where}, which blocks the event "
                "loop: its timeout cannot interrupt it (asyncio cancels only at an await), and "
                "every other coroutine on the loop waits with it.",
                f"use {hit[1]}, or move the blocking work into await asyncio.to_thread(...)",
                Source(module.rel, call.lineno), job=model.name))  # fmt: skip
    return out


def _calls(function: FunctionNode) -> Iterator[ast.Call]:
    """Calls in the function's own body: not in nested functions or lambdas, which run
    elsewhere (asyncio.to_thread(lambda: ...), run_in_executor)."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))

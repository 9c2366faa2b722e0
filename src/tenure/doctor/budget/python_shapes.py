"""The small Python shapes the body reader recognises: comprehensions, a handed database
session, a fixed list, a related manager, a row's relation, a timeout past the budget, a chunk
of the ids a unit selected."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable

from tenure.doctor.astutil import FunctionNode
from tenure.doctor.budget.model import Costly, Effect
from tenure.doctor.budget.python_project import call_name, dotted

COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
Comprehension = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
SESSION_NAMES = ("session", "db", "conn", "connection")
# Fields of a row that hold where a job stopped: read and written back, a stored cursor.
CURSOR_FIELDS = {"last_id", "last_pk", "last_processed_id", "last_synced_id", "cursor",
                 "offset", "last_offset"}  # fmt: skip


def handed_session(call: ast.Call) -> bool:
    """A call handed the database session (`get_pairs(db_session)`): it queries or writes."""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(arg, ast.Name) and arg.id.lower().endswith(SESSION_NAMES):
            return True
    return False


def literals(expr: ast.expr) -> bool:
    """`[1, 2, 3]`, `(lo_const, 500)`: a fixed list written in the code."""
    return isinstance(expr, ast.List | ast.Tuple | ast.Set) and all(
        isinstance(e, ast.Constant) for e in expr.elts
    )


def related_manager(call: ast.Call) -> bool:
    """`customer.order_set.filter(...)`, `project.orders.filter(paid=False)`: a relation of
    one object, filtered with lookups; a Django related manager's rows."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Attribute):
        return False
    manager = func.value
    return manager.attr.endswith("_set") or bool(call.keywords)


def on_row(expr: ast.expr, row: set[str], *, relation: bool = False) -> bool:
    """`order.invoice_set`, `cert.domains`: an attribute of the row (its relation), not the
    row itself. `relation`: `expr` is the called method, so one attribute more is needed."""
    parts = dotted(expr).split(".")
    need = 3 if relation else 2
    return bool(row) and parts[0] in row and len(parts) >= need and "()" not in parts[0]


def mentions_any(expr: ast.expr, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))


def given_params(fn: FunctionNode, call: ast.Call, params: set[str]) -> set[str]:
    """The parameters of `fn` that receive what the unit was given."""
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    given = {n for n, a in zip(names, call.args, strict=False) if mentions_any(a, params)}
    given |= {k.arg for k in call.keywords if k.arg and mentions_any(k.value, params)}
    return given


BUDGET_SECONDS = 5


def past_budget(found: ast.keyword | None) -> bool:
    """No timeout, `timeout=None`, or a literal one past the 5-second budget (`timeout=30`,
    `timeout=(3.05, 27)`: connect plus read); a timeout read from settings is taken as
    defined within it."""
    if found is None:
        return True
    given = found.value
    if isinstance(given, ast.Constant) and given.value is None:
        return True  # `timeout=None`: wait for as long as the other side takes
    parts = given.elts if isinstance(given, ast.Tuple) else [given]  # (connect, read)
    values = [p.value for p in parts if isinstance(p, ast.Constant)]
    seconds = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return len(seconds) == len(parts) and sum(seconds) > BUDGET_SECONDS


def chunk_of_ids(call: ast.Call) -> bool:
    values = [*call.args, *(k.value for k in call.keywords)]
    return any(
        isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice)
        for v in values
        for n in ast.walk(v)
    )


def is_id(arg: ast.expr) -> bool:
    return isinstance(arg, ast.Constant) and arg.value in ("id", "pk")


def refined(name: str, value: ast.expr, held: dict[str, ast.expr]) -> ast.expr:
    """`qs = qs.filter(paid=True)`: the new query is the old one refined, read as one chain
    (`Order.objects.filter(...).filter(paid=True)`), so a range filter added keeps its bound."""
    before = held.get(name)
    if before is None or not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)):
        return value
    old: ast.expr = before

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return old if node.id == name else node

    refined: ast.expr = Inline().visit(copy.deepcopy(value))
    return refined


def one_value(node: ast.Call | ast.Subscript) -> ast.expr | None:
    """The query a call or subscript cuts to one row: `qs.first()`, `qs.last()`, `qs[0]`,
    `qs[:1]` (the coordinator's own lowest or highest id, read once)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        one = node.func.attr in ("first", "last", "get", "latest", "earliest")
        return node.func.value if one else None
    if not isinstance(node, ast.Subscript):
        return None
    index = node.slice
    if isinstance(index, ast.Constant) and index.value in (0, -1):
        return node.value
    upper = index.upper if isinstance(index, ast.Slice) and index.lower is None else None
    return node.value if isinstance(upper, ast.Constant) and upper.value == 1 else None


# Calls whose value is a sent job's handle: `t.delay()`, `t.apply_async()`, `AsyncResult(id)`.
SENDS = {"delay", "apply_async", "send_task", "enqueue", "dispatch", "enqueue_call", "AsyncResult"}
CANVAS = ("group", "chord", "chain")


def sent(expr: ast.expr) -> bool:
    """A job's (or a canvas's) handle: `t.delay(1)`, `AsyncResult(id)`, and a canvas called
    (`chord(header)(callback)`, `group(...)()`), which sends it and returns its result."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Call):
        inner = func.func
        name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
        return name in CANVAS
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in SENDS


def session_like(expr: ast.expr) -> bool:
    """`session`, `db.session`, `conn`, `connection`, `bind`, `op.get_bind()`: what runs SQL."""
    base = dotted(expr).lower().replace("()", "")
    return "session" in base or base.endswith(("db", "conn", "connection", "bind"))


def row_attribute(assign: ast.Assign, row: set[str]) -> bool:
    """`user.slug = ...`: an attribute of the loop's row assigned."""
    return any(
        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in row
        for t in assign.targets
    )


def stored_cursor(nodes: list[ast.AST], params: set[str]) -> list[Costly]:
    """A cursor kept in a row of the project's own (`state = SyncState.objects.get(...)`,
    read as `state.last_id`, written back with `state.last_id = o.id; state.save()` or
    `.update(last_id=...)`): the settings-table form of the standard's stored cursor."""
    saved = {dotted(n.func.value) for n in nodes if isinstance(n, ast.Call)
             and call_name(n) == "save" and isinstance(n.func, ast.Attribute)}  # fmt: skip
    out: list[Costly] = []
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr in CURSOR_FIELDS:
            base = dotted(node.value)
            if not isinstance(node.value, ast.Name) or base in params:
                continue  # a field of what the job was handed is its range, not a cursor
            if isinstance(node.ctx, ast.Load):
                out.append(Costly("method", f"{base}.{node.attr}", node.lineno))
            elif base in saved:
                out.append(Costly("write", f"{base}.{node.attr} = ...", node.lineno))
        elif isinstance(node, ast.Call) and call_name(node) in ("update", "update_or_create"):
            written = [k for k in node.keywords if k.arg in CURSOR_FIELDS]
            if written:
                what = f"{dotted(node.func)}({written[0].arg}=...)"
                out.append(Costly("write", what, node.lineno))
    return out


# What a loop asks of a job's handle while it waits for the job to end.
POLLS = {"ready", "successful", "failed", "completed_count", "state", "status"}


def polled(test: ast.expr, is_handle: Callable[[ast.expr], bool]) -> ast.expr | None:
    """`while not res.ready():`, `while res.state == "PENDING":`: the loop holds the unit
    until the job it sent is done, as `res.get()` would. The handle asked, or None."""
    for node in ast.walk(test):
        asked = node.func if isinstance(node, ast.Call) else node
        if isinstance(asked, ast.Attribute) and asked.attr in POLLS and is_handle(asked.value):
            return asked.value
    return None


# A key that names where a run stopped: `last_id`, `orders_last_synced_id`, `offset`.
CURSOR_KEY = re.compile(r"last_\w*(id|pk)\b|offset|cursor|last_processed")
CURSOR_STORES = ("cache", "redis", "setting", "state", "option")
CURSOR_READS = {"get", "filter", "get_or_create", "first", "values_list"}
CURSOR_WRITES = {"set", "incr", "add", "update_or_create", "update", "set_many"}
KEY_ARGS = {"key", "name", "slug"}


def cursor_call(call: ast.Call) -> Effect | None:
    """`cache.get("last_id")` (a read), `Setting.objects.update_or_create(key=
    "orders_last_id", ...)` (a write): a store keyed by a cursor. The key is the first
    argument or a `key=`/`name=` of the call or of the chain it is made on."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in CURSOR_READS | CURSOR_WRITES:
        return None
    if not any(w in ast.unparse(func.value).lower() for w in CURSOR_STORES):
        return None
    keys: list[ast.expr] = []
    for node in [call, *(n for n in ast.walk(func.value) if isinstance(n, ast.Call))]:
        keys += node.args[:1] + [k.value for k in node.keywords if k.arg in KEY_ARGS]
    if not any(CURSOR_KEY.search(ast.unparse(key).lower()) for key in keys):
        return None
    return "write" if func.attr in CURSOR_WRITES else "method"


# Manager methods that hand back one object or a count, not rows.
ONE_OBJECT = ("get", "create", "count", "exists", "aggregate", "latest", "earliest", "first",
              "last", "in_bulk", "update", "delete", "bulk_")  # fmt: skip


def manager_call(expr: ast.expr) -> bool:
    """`Profile.objects.confirmed_for_reminders()`: a custom manager method on a model. What
    it hands back is a queryset unless its name says one object or a count."""
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return False
    manager = expr.func.value
    return (
        isinstance(manager, ast.Attribute)
        and manager.attr == "objects"
        and isinstance(manager.value, ast.Name)
        and manager.value.id[:1].isupper()
        and not expr.func.attr.startswith(ONE_OBJECT)
    )

"""What one Python function body does, in the model's terms: the loops over query rows and the
work each row costs, external calls without a timeout, dispatches, waits, batch adds, cursors.

Calls into the project's own functions and methods are followed two levels deep, so a loop that
calls `order.export()` costs what `Order.export` costs."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from tenure.doctor.astutil import FunctionNode, Module, keyword
from tenure.doctor.budget.model import Costly, Effect, Loop, Unit, costly_name
from tenure.doctor.walk import FoundFile

# QuerySet / SQLAlchemy methods that keep a query a query (still every matching row).
QUERY_CHAIN = {
    "all", "filter", "exclude", "iterator", "order_by", "select_related", "prefetch_related",
    "annotate", "distinct", "values", "values_list", "only", "defer", "using", "scalars",
    "filter_by", "options", "join", "outerjoin", "where", "yield_per", "execution_options",
}  # fmt: skip
QUERY_ROOTS = {"objects", "query"}  # Model.objects..., Model.query... (Flask-SQLAlchemy)
SESSION_QUERY = {"query", "execute", "scalars"}  # session.query(...), session.execute(select())
# A filter over an id range, or ids the unit was given: bounded work.
RANGE_KEYS = ("__range", "__in", "__gte", "__gt", "__lt", "__lte")
WRITES = {"save", "delete", "update", "create", "get_or_create", "update_or_create",
          "bulk_create", "bulk_update", "commit", "execute", "executemany"}  # fmt: skip
MAIL = {"send_mail", "send_mass_mail", "mail_admins", "email_user", "send_email",
        "send_messages", "send_notification"}  # fmt: skip
FILES = {"open", "write_text", "write_bytes", "upload_file", "upload_fileobj", "put_object",
         "download_file", "get_object", "copyfile", "copy", "remove", "unlink"}  # fmt: skip
HTTP_LIBS = ("requests.", "httpx.", "urllib.request.", "urllib3.")
HTTP_VERBS = {"get", "post", "put", "patch", "delete", "head", "request", "urlopen", "stream"}
DISPATCH = {"delay", "apply_async", "send_task", "enqueue", "dispatch", "enqueue_call"}
SENDS = DISPATCH | {"AsyncResult"}
DEPTH = 2
# A branch taken only in tests or with eager Celery (task.get() returns at once there).
TEST_ONLY = (
    "EAGER",
    "TESTING",
    "eager",
    "testing",
)  # how far calls into the project's own code are followed


@dataclass
class Project:
    """What following a call needs: module-level functions and methods by name. Files not yet
    parsed are searched for `def NAME(` when a call needs them, and parsed then."""

    functions: dict[str, list[FunctionNode]] = field(default_factory=dict)
    methods: dict[str, list[FunctionNode]] = field(default_factory=dict)
    classes: dict[int, str] = field(default_factory=dict)  # id(method) -> its class, lowered
    sources: list[FoundFile] = field(default_factory=list)
    parsed: set[str] = field(default_factory=set)
    _looked_up: set[str] = field(default_factory=set)
    _effects: dict[int, list[Costly]] = field(default_factory=dict)

    def defined(self, name: str, *, method: bool) -> list[FunctionNode]:
        if name not in self._looked_up:
            self._looked_up.add(name)
            needle = f"def {name}(".encode()
            for found in self.sources:
                if found.path not in self.parsed and needle in found.data:
                    module = light_module(found)
                    if module is not None:
                        self.add(module)
        return (self.methods if method else self.functions).get(name, [])

    def add(self, module: Module) -> None:
        self.parsed.add(module.path)
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.methods.setdefault(item.name, []).append(item)
                        self.classes[id(item)] = node.name.lower()


def light_module(found: FoundFile) -> Module | None:
    """A Module with its top-level definitions and imports, without walking every node as
    Module.parse does for the tenure checks: most files read here are only searched."""
    try:
        tree = ast.parse(found.data, filename=found.rel)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return None  # the tenure checks report what they could not parse
    module = Module(found.path, found.rel, tree)
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                module.constants[node.targets[0].id] = node.value
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module.aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                module.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.If):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
            todo += [s for handler in node.handlers for s in handler.body]
    return module


def dotted(expr: ast.expr) -> str:
    """`a.b.c` for a chain of names, attributes and calls (calls shown as `()`)."""
    parts: list[str] = []
    while True:
        if isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Call):
            parts.append("()")
            expr = expr.func
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Name):
            parts.append(expr.id)
            break
        else:
            break
    return ".".join(reversed(parts)).replace(".()", "()")


def call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `body`, not entering nested function or class definitions."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                stack.append(child)


class Reader:
    """Reads one unit's function (and the helpers it calls) into a Unit."""

    def __init__(self, module: Module, project: Project, params: set[str]) -> None:
        self.module = module
        self.project = project
        self.params = params  # what the unit was given: ids within these are bounded
        self.queries: dict[str, ast.expr] = {}  # local name -> the query it holds
        self.test_only: set[int] = set()  # nodes under `if app.config["TESTING"]:` and such

    # -- queries ---------------------------------------------------------------------------
    def query(self, expr: ast.expr, depth: int = 0) -> tuple[bool, bool]:
        """(is it a query over rows, is it bounded by a range or ids the unit was given).
        `qs = qs.filter(...)` refers to itself: names are followed a few steps only."""
        if depth > 4:
            return (False, False)
        if isinstance(expr, ast.Name) and expr.id == "queryset" and expr.id in self.params:
            return (True, False)  # an admin action's or a filter's rows, however many selected
        if isinstance(expr, ast.Name):
            held = self.queries.get(expr.id)
            return self.query(held, depth + 1) if held is not None else (False, False)
        if isinstance(expr, ast.Subscript):
            if isinstance(expr.slice, ast.Slice):
                return (False, False)
            return self.query(expr.value, depth + 1)
        seen_root, bounded = False, False
        node: ast.expr = expr
        while True:
            if isinstance(node, ast.Call):
                bounded = bounded or self._range_filter(node)
                name = call_name(node)
                if isinstance(node.func, ast.Attribute) and name in SESSION_QUERY:
                    base = dotted(node.func.value).lower()
                    if "session" in base or base.endswith("db") or base.endswith("conn"):
                        seen_root = True
                if name in ("get_model", "get_queryset", "filter_queryset"):
                    seen_root = True
                node = node.func
            elif isinstance(node, ast.Attribute):
                if node.attr in QUERY_ROOTS:
                    seen_root = True
                if node.attr in ("all", "iterator") and not seen_root:
                    seen_root = True  # a related manager: order.items.all()
                node = node.value
            elif isinstance(node, ast.Name) and node.id in self.queries:
                inner, inner_bounded = self.query(self.queries[node.id], depth + 1)
                return (inner or seen_root, bounded or inner_bounded)
            else:
                break
        names = QUERY_CHAIN | {"query", "get_queryset", "filter_queryset", "execute", "fetchall"}
        chain_ok = isinstance(expr, ast.Call) and call_name(expr) in names
        chain_ok = chain_ok or (isinstance(expr, ast.Attribute) and expr.attr in QUERY_ROOTS)
        return (seen_root and chain_ok, bounded)

    def _range_filter(self, call: ast.Call) -> bool:
        for kw in call.keywords:
            if kw.arg and kw.arg.endswith(RANGE_KEYS) and self._given(kw.value):
                return True
        sql = " ".join(
            a.value.lower()
            for a in call.args
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        )
        if any(w in sql for w in (" between ", "id >", "id <", "id in", "id = any")):
            return any(self._given(a) for a in call.args)
        if call_name(call) in ("between", "in_") or call_name(call) == "where":
            return any(self._given(a) for a in ast.walk(call) if isinstance(a, ast.expr))
        return False

    def _given(self, expr: ast.expr) -> bool:
        names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        return bool(names & self.params)

    # -- the body --------------------------------------------------------------------------
    def read(self, fn: FunctionNode, unit: Unit) -> None:
        nodes = list(own_nodes(fn.body))
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self.queries[target.id] = node.value
            elif isinstance(node, ast.If) and any(w in ast.unparse(node.test) for w in TEST_ONLY):
                self.test_only |= {id(n) for n in own_nodes(node.body)}
        in_loops: set[int] = set()
        for node in nodes:
            if isinstance(node, ast.For | ast.AsyncFor) and id(node) not in in_loops:
                is_query, bounded = self.query(node.iter)
                if not is_query:
                    continue
                loop = Loop(dotted(node.iter) or ast.unparse(node.iter)[:60], node.lineno,
                            bounded=bounded)  # fmt: skip
                row = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
                for inner in own_nodes(node.body):
                    in_loops.add(id(inner))
                    if isinstance(inner, ast.Call):
                        loop.work += self.effects(inner, row, 0)
                unit.loops.append(loop)
            elif isinstance(node, ast.Call) and id(node) not in self.test_only:
                self.call(node, unit)

    def call(self, call: ast.Call, unit: Unit) -> None:
        """What a call outside any loop tells: timeouts, dispatches, waits, batches, cursors."""
        name, line = call_name(call), call.lineno
        qualified = self.module.qualify(call.func) or ""
        written = dotted(call.func)
        if self._http(qualified, name) and keyword(call, "timeout") is None:
            unit.untimed_calls.append(Costly("http", written, line))
        if name in DISPATCH and isinstance(call.func, ast.Attribute):
            unit.dispatches.append(Costly("dispatch", written, line))
            unit.dispatches_job_class = True
        if name in ("get", "wait", "join") and isinstance(call.func, ast.Attribute):
            target = call.func.value
            handle = isinstance(target, ast.Name) and self._handle(target.id)
            if handle or (isinstance(target, ast.Call) and call_name(target) in SENDS):
                unit.waits.append(Costly("dispatch", written, line))
        adds = name == "add" and "batch" in written
        if adds or (name in ("group", "chord") and (qualified.startswith("celery") or
                                                    name == "chord")):  # fmt: skip
            unit.adds_to_batch.append(Costly("dispatch", written, line))
        if (adds or name in ("group", "chord", "batch")) and self._per_row(call):
            unit.floods.append(Costly("dispatch", written, line))
        if name == "values_list" and keyword(call, "flat") is not None:
            is_query, bounded = self.query(call)
            if is_query and not bounded and any(_is_id(a) for a in call.args):
                unit.plucks_all_ids.append(Costly("method", written, line))
        if name in ("get", "set", "incr", "add") and self._cursor_key(call):
            unit.cursor.append(Costly("write" if name != "get" else "method", written, line))

    def _per_row(self, call: ast.Call) -> bool:
        """`group(t.s(o.id) for o in Order.objects.all())`: one job per row of a query."""
        for arg in call.args[:1]:
            if isinstance(arg, ast.GeneratorExp | ast.ListComp):
                is_query, bounded = self.query(arg.generators[0].iter)
                return is_query and not bounded
        return False

    def _handle(self, name: str) -> bool:
        held = self.queries.get(name)
        return isinstance(held, ast.Call) and call_name(held) in SENDS

    @staticmethod
    def _cursor_key(call: ast.Call) -> bool:
        if not call.args or not isinstance(call.func, ast.Attribute):
            return False
        base = dotted(call.func.value).lower()
        if not any(w in base for w in ("cache", "redis", "settings", "state")):
            return False
        key = ast.unparse(call.args[0]).lower()
        return any(w in key for w in ("last_id", "last_pk", "offset", "cursor", "last_processed"))

    @staticmethod
    def _http(qualified: str, name: str) -> bool:
        return qualified.startswith(HTTP_LIBS) and name in HTTP_VERBS

    def effects(self, call: ast.Call, row: set[str], depth: int, via: str = "") -> list[Costly]:
        """The cost of one call made for each row."""
        name, line = call_name(call), call.lineno
        written = dotted(call.func)
        qualified = self.module.qualify(call.func) or ""
        effect: Effect | None = None
        if name in WRITES and isinstance(call.func, ast.Attribute):
            effect = "write"
        elif name in MAIL:
            effect = "mail"
        elif self._http(qualified, name):
            effect = "http"
        elif name in FILES and (name != "open" or isinstance(call.func, ast.Name)):
            loose = name in ("copy", "copyfile", "remove", "unlink")  # copy.copy, list.remove
            effect = "file" if not loose or qualified.startswith(("shutil.", "os.")) else None
        elif name in DISPATCH and isinstance(call.func, ast.Attribute):
            effect = "dispatch"
        if effect is not None:
            return [Costly(effect, written, line, via)]
        if depth >= DEPTH:
            return []
        found = [
            Costly(c.effect, written, line, c.via or c.what) if depth == 0 else c
            for c in self._followed(call, name, row, depth)
        ][:1]
        if not found and depth == 0 and costly_name(name) and self._mentions(call, row):
            return [Costly("method", written, line, f"{name}, by its name")]
        return found

    @staticmethod
    def _mentions(call: ast.Call, row: set[str]) -> bool:
        on = call.func.value if isinstance(call.func, ast.Attribute) else None
        values = [*call.args, *(k.value for k in call.keywords)] + ([on] if on else [])
        return any(isinstance(n, ast.Name) and n.id in row for v in values for n in ast.walk(v))

    def _followed(self, call: ast.Call, name: str, row: set[str], depth: int) -> list[Costly]:
        func = call.func
        targets: list[FunctionNode] = []
        if isinstance(func, ast.Name):
            targets = self.project.defined(name, method=False)
        elif isinstance(func, ast.Attribute):
            receiver = func.value
            on_row = isinstance(receiver, ast.Name) and receiver.id in row
            on_self = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            if on_row or on_self or any(isinstance(a, ast.Name) and a.id in row for a in
                                        call.args):  # fmt: skip
                targets = self.project.defined(name, method=True)
        hint = (
            dotted(func.value).rsplit(".", 1)[-1].lower() if isinstance(func, ast.Attribute) else ""
        )
        named = [
            t
            for t in targets
            if hint and self.project.classes.get(id(t)) in (hint, hint.rstrip("s"))
        ]
        for target in named or targets[:3]:
            found = self._function_effects(target, depth + 1)
            if found:
                return [Costly(c.effect, c.what, c.line, target.name) for c in found]
        return []

    def _function_effects(self, fn: FunctionNode, depth: int) -> list[Costly]:
        key = id(fn) * 10 + depth
        cached = self.project._effects.get(key)
        if cached is None:
            self.project._effects[key] = []  # a recursive call costs nothing more
            cached = [
                c
                for node in own_nodes(fn.body)
                if isinstance(node, ast.Call)
                for c in self.effects(node, set(), depth)
            ]
            self.project._effects[key] = cached
        return cached


def _is_id(arg: ast.expr) -> bool:
    return isinstance(arg, ast.Constant) and arg.value in ("id", "pk")

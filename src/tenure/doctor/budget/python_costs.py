"""What a Python query is and what one call costs when made for each of a query's rows: a
write, a query, a mail, an HTTP call, a file, a dispatch, or (followed into the project's own
functions, two levels deep) what the called function does.

The body reader (python_body) walks a unit's statements; this module answers its questions about
a single expression or call."""

from __future__ import annotations

import ast

from tenure.doctor.astutil import FunctionNode, Module, keyword
from tenure.doctor.budget.model import Costly, Effect, costly_name
from tenure.doctor.budget.python_project import (
    Project,
    call_name,
    dotted,
    own_nodes,
)
from tenure.doctor.budget.python_shapes import (
    handed_session,
    literals,
    manager_call,
    on_row,
    past_budget,
    related_manager,
    session_like,
)

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
WRITES |= {f"a{name}" for name in WRITES}  # Django's async twins: asave(), adelete(), ...
MAIL = {"send_mail", "send_mass_mail", "mail_admins", "email_user", "send_email",
        "send_messages", "send_notification"}  # fmt: skip
FILES = {"open", "write_text", "write_bytes", "upload_file", "upload_fileobj", "put_object",
         "download_file", "get_object", "copyfile", "copy", "remove", "unlink"}  # fmt: skip
HTTP_LIBS = ("requests.", "httpx.", "urllib.request.", "urllib3.")
HTTP_CLIENTS = {"requests.Session", "requests.session", "requests.sessions.Session",
                "httpx.Client", "httpx.AsyncClient"}  # fmt: skip
HTTP_VERBS = {"get", "post", "put", "patch", "delete", "head", "request", "urlopen", "stream"}
# Reads that run a query: a row's relation (`order.invoice_set.count()`) or `Model.objects.get()`.
READS = {"filter", "exclude", "count", "exists", "first", "last", "aggregate", "all",
         "values_list", "values", "iterator"}  # fmt: skip
DISPATCH = {"delay", "apply_async", "send_task", "enqueue", "dispatch", "enqueue_call"}
DEPTH = 2  # how far calls into the project's own code are followed
# A task's own methods that make a signature or send it: not its body run here.
NOT_INLINE = {"s", "si", "signature", "delay", "apply_async", "map", "starmap", "chunks"}
# Calls that hand back the rows they are given: a loop over them walks the query.
ROW_WRAPPERS = {"list", "set", "sorted", "tuple", "enumerate", "reversed", "tqdm", "track"}


class Costs:
    """What a unit's queries are, and what a call costs per row (the reader's questions)."""

    def __init__(self, module: Module, project: Project, params: set[str]) -> None:
        self.module = module
        self.project = project
        self.params = params  # what the unit was given: ids within these are bounded
        self.queries: dict[str, ast.expr] = {}  # local name -> the query it holds

    # -- queries ---------------------------------------------------------------------------
    def query(self, expr: ast.expr, depth: int = 0) -> tuple[bool, bool]:
        """(is it a query over rows, is it bounded by a range or ids the unit was given).
        `qs = qs.filter(...)` refers to itself: names are followed a few steps only."""
        if depth > 4:
            return (False, False)
        if isinstance(expr, ast.Name) and expr.id == "queryset" and expr.id in self.params:
            return (True, False)  # an admin action's or a filter's rows, however many selected
        if isinstance(expr, ast.Call) and call_name(expr) in ROW_WRAPPERS:
            # `enumerate(qs.iterator())`, `tqdm(qs)`: the same rows, counted or drawn
            return self.query(expr.args[0], depth + 1) if expr.args else (False, False)
        if isinstance(expr, ast.Call) and handed_session(expr):
            return (True, False)  # `get_pairs(db_session)`: a data-access function's rows
        if isinstance(expr, ast.Name):
            held = self.queries.get(expr.id)
            return self.query(held, depth + 1) if held is not None else (False, False)
        if isinstance(expr, ast.Subscript):
            if isinstance(expr.slice, ast.Slice) and expr.slice.upper is not None:
                return (False, False)  # `qs[:500]`: one page; `qs[offset:]` is every row past it
            return self.query(expr.value, depth + 1)
        seen_root, bounded = False, False
        node: ast.expr = expr
        while True:
            if isinstance(node, ast.Call):
                bounded = bounded or self._range_filter(node)
                name = call_name(node)
                if isinstance(node.func, ast.Attribute) and name in SESSION_QUERY:
                    seen_root = seen_root or session_like(node.func.value)
                if name in ("get_model", "get_queryset", "filter_queryset"):
                    seen_root = True
                if name in ("filter", "exclude") and related_manager(node):
                    seen_root = True  # `customer.order_set.filter(paid=False)`
                node = node.func
            elif isinstance(node, ast.Attribute):
                if node.attr in QUERY_ROOTS:
                    seen_root = True
                if node.attr in ("all", "iterator") and not seen_root:
                    seen_root = True  # a related manager: order.items.all()
                node = node.value
            elif isinstance(node, ast.Name) and node.id in self.queries:
                held = self.queries[node.id]
                if isinstance(held, ast.Subscript) and getattr(held.slice, "upper", None):
                    return (False, False)  # `page = qs[:100]` then `page.iterator()`
                inner, inner_bounded = self.query(held, depth + 1)
                return (inner or seen_root, bounded or inner_bounded)
            else:
                break
        names = QUERY_CHAIN | {"query", "get_queryset", "filter_queryset", "execute", "fetchall"}
        chain_ok = isinstance(expr, ast.Call) and call_name(expr) in names
        chain_ok = chain_ok or (isinstance(expr, ast.Attribute) and expr.attr in QUERY_ROOTS)
        chain_ok = chain_ok or manager_call(expr)
        return (seen_root and chain_ok, bounded)

    def _session_rows(self, expr: ast.expr) -> bool:
        """Rows a SQLAlchemy session tracks (`session.query(User)`, `session.scalars(...)`):
        an attribute set on one is written back at the next flush."""
        if isinstance(expr, ast.Name) and expr.id in self.queries:
            expr = self.queries[expr.id]
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("query", "scalars")
            and session_like(n.func.value)
            for n in ast.walk(expr)
        )

    def _range_filter(self, call: ast.Call) -> bool:
        for kw in call.keywords:
            if kw.arg and kw.arg.endswith(RANGE_KEYS) and self._given(kw.value):
                return True
            if kw.arg and kw.arg.endswith(("__in", "__range")) and literals(kw.value):
                return True  # `id__in=[1, 2, 3]`: a fixed list, the standard's bounded work
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

    # -- what one call costs ---------------------------------------------------------------
    @staticmethod
    def _http(qualified: str, name: str) -> bool:
        return qualified.startswith(HTTP_LIBS) and name in HTTP_VERBS

    def _untimed(self, call: ast.Call, qualified: str, name: str) -> bool:
        """An HTTP call with no timeout within the budget, nor one its client was made with."""
        if not past_budget(keyword(call, "timeout")):
            return False
        if self._http(qualified, name):
            return True
        client = self._client(call)
        return client is not None and past_budget(keyword(client, "timeout"))

    def _client(self, call: ast.Call) -> ast.Call | None:
        """`session.get(...)` where `session = requests.Session()` (in the function, in a
        `with`, or at module level), `client.post(...)` on an `httpx.Client(...)`: the call
        that made the client, whose own timeout (if any) applies."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in HTTP_VERBS:
            return None
        if not isinstance(func.value, ast.Name):
            return None
        made = self.queries.get(func.value.id, self.module.constants.get(func.value.id))
        if not isinstance(made, ast.Call):
            return None
        return made if (self.module.qualify(made.func) or "") in HTTP_CLIENTS else None

    def effects(self, call: ast.Call, row: set[str], depth: int, via: str = "") -> list[Costly]:
        """The cost of one call made for each row."""
        name, line = call_name(call), call.lineno
        written = dotted(call.func)
        qualified = self.module.qualify(call.func) or ""
        effect: Effect | None = None
        if name in WRITES and isinstance(call.func, ast.Attribute):
            effect = "write"
        elif name in ("add", "remove", "set", "clear") and on_row(call.func, row, relation=True):
            effect = "write"  # `user.groups.add(group)`: a many-to-many row written
        elif name in ("writerow", "writerows"):
            effect = "file"  # a csv writer: one line per row, into a file or a response
        elif (
            name in READS
            and isinstance(call.func, ast.Attribute)
            and (on_row(call.func.value, row) or ".objects." in f".{dotted(call.func.value)}.")
        ):
            effect = "query"  # `order.invoice_set.count()`, `Locale.objects.filter(...)`
        elif name == "get" and ".objects." in f".{dotted(call.func)}":
            effect = "query"
        elif name in MAIL:
            effect = "mail"
        elif self._http(qualified, name) or self._client(call) is not None:
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
        if not found and depth == 0 and row and handed_session(call) and self._mentions(call, row):
            return [Costly("query", written, line, "handed the database session")]
        inline = ".tasks." in f".{qualified}" and name not in NOT_INLINE
        if not found and depth == 0 and inline and self._mentions(call, row):
            # `maybe_award_badge(..., user.id)` imported from a tasks module and called, not
            # sent: the task's whole body runs here, once per row
            return [Costly("method", written, line, "a task run inline")]
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

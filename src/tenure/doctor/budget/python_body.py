"""What one Python function body does, in the model's terms: the loops over query rows and the
work each row costs, external calls without a timeout, dispatches, waits, batch adds, cursors.

Calls into the project's own functions and methods are followed two levels deep, so a loop that
calls `order.export()` costs what `Order.export` costs."""

from __future__ import annotations

import ast

from tenure.doctor.astutil import FunctionNode, Module, keyword
from tenure.doctor.budget.model import Costly, Loop, Unit
from tenure.doctor.budget.python_costs import DISPATCH, Costs
from tenure.doctor.budget.python_project import (
    Project,
    call_name,
    dotted,
    light_module,
    own_nodes,
)
from tenure.doctor.budget.python_shapes import (
    COMPREHENSIONS,
    Comprehension,
    chunk_of_ids,
    cursor_call,
    given_params,
    is_id,
    mentions_any,
    on_row,
    one_value,
    polled,
    refined,
    row_attribute,
    sent,
    stored_cursor,
)

__all__ = ["Project", "Reader", "call_name", "dotted", "light_module", "own_nodes"]

# Calls that grow a container a loop fills with what it read from each row.
GROWS = {"append", "extend", "add", "insert", "setdefault", "update", "appendleft"}
# Effects that spend what a loop collected: one mail, call or file per collected row.
SPENDS = ("mail", "http", "file", "dispatch", "method")
# Calls that send many jobs at once: a canvas, a tenure batch, tenure's / RQ's bulk dispatch.
MANY = ("group", "chord", "batch", "dispatch_many", "enqueue_many")
SPREAD = ("queue", "countdown", "eta")  # apply_async options: a queue of its own, or spread
# A branch taken only in tests or with eager Celery (task.get() returns at once there).
TEST_ONLY = ("EAGER", "TESTING", "eager", "testing")


class Reader(Costs):
    """Reads one unit's function (and the helpers it calls) into a Unit."""

    def __init__(self, module: Module, project: Project, params: set[str], follow: int = 1) -> None:
        super().__init__(module, project, params)
        self.test_only: set[int] = set()  # nodes under `if app.config["TESTING"]:` and such
        self.grown: dict[str, Loop] = {}  # local name -> the loop over rows that filled it
        self.follow = follow  # how many calls deep the loops of the project's functions are read
        self.spread = False  # the unit sends its jobs to a queue of their own, or spreads them
        self.one: set[int] = set()  # query calls whose rows are cut to one value (`.first()`)

    # -- the body --------------------------------------------------------------------------
    def read(self, fn: FunctionNode, unit: Unit) -> None:
        nodes = list(own_nodes(fn.body))
        self.spread = any(isinstance(n, ast.keyword) and n.arg in SPREAD for n in nodes)
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    self.queries[target.id] = refined(target.id, node.value, self.queries)
            elif isinstance(node, ast.Call | ast.Subscript) and (cut := one_value(node)):
                self.one.add(id(cut))  # `...values_list("id", flat=True).first()`: one id
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:  # `with requests.Session() as s:`
                    if isinstance(item.optional_vars, ast.Name):
                        self.queries[item.optional_vars.id] = item.context_expr
            elif isinstance(node, ast.If) and any(w in ast.unparse(node.test) for w in TEST_ONLY):
                self.test_only |= {id(n) for n in own_nodes(node.body)}
        unit.cursor += stored_cursor(nodes, self.params)
        in_loops: set[int] = set()
        for node in nodes:
            if isinstance(node, ast.For | ast.AsyncFor) and id(node) not in in_loops:
                is_query, bounded = self.query(node.iter)
                over = dotted(node.iter) or ast.unparse(node.iter)[:60]
                built = self._built_from(node.iter)
                if built is not None and not is_query:
                    over, bounded = f"{over} (filled from {built.over})", built.bounded
                elif not is_query:
                    continue
                loop = Loop(over, node.lineno, bounded=bounded)
                row = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
                orm = self._session_rows(node.iter)
                for inner in own_nodes(node.body):
                    in_loops.add(id(inner))
                    if isinstance(inner, ast.Call):
                        loop.work += self.effects(inner, row, 0)
                        self._cursor(inner, unit)
                    elif isinstance(inner, ast.Assign) and orm and row_attribute(inner, row):
                        # `user.slug = ...` on a session's row: one UPDATE per row at flush
                        what = f"{ast.unparse(inner.targets[0])} = ..."
                        loop.work.append(Costly("write", what, inner.lineno))
                    elif isinstance(inner, ast.For | ast.AsyncFor) and on_row(inner.iter, row):
                        what = dotted(inner.iter) or ast.unparse(inner.iter)[:60]
                        loop.work.append(Costly("query", what, inner.lineno))
                self._grows(node.body, row, loop)
                unit.loops.append(loop)
            elif isinstance(node, ast.While) and (poll := polled(node.test, self._sent)):
                unit.waits.append(Costly("dispatch", ast.unparse(poll)[:60], node.lineno))
            elif isinstance(node, ast.Assign) and isinstance(node.value, COMPREHENSIONS):
                self._comprehension(node)
            elif isinstance(node, COMPREHENSIONS) and id(node) not in in_loops:
                self._comprehension_work(node, unit, in_loops)
            elif isinstance(node, ast.Call) and id(node) not in self.test_only:
                spent = self._spends(node, unit)
                if not spent:
                    self.call(node, unit)
                    self._follow_loops(node, unit)

    # -- what a loop collects, and where it is spent ------------------------------------------
    def _grows(self, body: list[ast.stmt], row: set[str], loop: Loop) -> None:
        """Names a loop fills from its rows: `messages.append(...)`, `data[row.user]`."""
        for node in own_nodes(body):
            base: ast.expr | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                base = node.func.value if node.func.attr in GROWS else None
            elif isinstance(node, ast.Subscript) and mentions_any(node.slice, row):
                base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name) and base.id not in row:
                self.grown.setdefault(base.id, loop)

    def _comprehension(self, node: ast.Assign) -> None:
        """`lines = [f"{o.number}" for o in Order.objects.all()]`: one item per row."""
        comp = node.value
        assert isinstance(comp, COMPREHENSIONS)
        is_query, bounded = self.query(comp.generators[0].iter)
        target = node.targets[0]
        if is_query and len(node.targets) == 1 and isinstance(target, ast.Name):
            first = comp.generators[0].iter
            over = dotted(first) or ast.unparse(first)[:60]
            self.grown[target.id] = Loop(over, first.lineno, bounded=bounded)

    def _comprehension_work(self, comp: Comprehension, unit: Unit, in_loops: set[int]) -> None:
        """`[send_mail(..., [c.email]) for c in Customer.objects.all()]`: a comprehension
        over a query's rows is a loop; what its element calls, each row costs."""
        first = comp.generators[0]
        is_query, bounded = self.query(first.iter)
        if not is_query:
            return
        row = {n.id for g in comp.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        parts = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt]
        calls = [n for part in parts for n in ast.walk(part) if isinstance(n, ast.Call)]
        work = [c for call in calls for c in self.effects(call, row, 0)]
        in_loops.update(id(n) for part in parts for n in ast.walk(part))
        if work:
            over = dotted(first.iter) or ast.unparse(first.iter)[:60]
            unit.loops.append(Loop(over, first.iter.lineno, work, bounded=bounded))

    def _built_from(self, expr: ast.expr) -> Loop | None:
        """The loop that filled what `expr` walks: `data`, `data.items()`, `sorted(data)`."""
        while isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("items", "values",
                                                                            "keys"):  # fmt: skip
                expr = expr.func.value
            elif isinstance(expr.func, ast.Name) and expr.func.id in ("sorted", "list"):
                if not expr.args:
                    return None
                expr = expr.args[0]
            else:
                return None
        return self.grown.get(expr.id) if isinstance(expr, ast.Name) else None

    def _spends(self, call: ast.Call, unit: Unit) -> bool:
        """`send_messages(messages)` after a loop filled `messages` from every row: the loop's
        rows cost what the call costs, so the call counts as the loop's work."""
        used = {n.id for a in [*call.args, *(k.value for k in call.keywords)]
                for n in ast.walk(a) if isinstance(n, ast.Name)}  # fmt: skip
        filled = [self.grown[n] for n in sorted(used) if n in self.grown]
        handed = [lp for lp in map(self._comprehended, call.args) if lp is not None]
        if not filled and not handed:
            return False
        # A comprehension handed over whole is spent item by item only by a bulk send
        # (send_mass_mail); one job given every id is one dispatch, not one per row.
        spends = SPENDS if filled else ("mail", "http", "file")
        filled += handed
        work = [c for c in self.effects(call, set(), 0) if c.effect in spends]
        if not work:
            return False
        loop = filled[0]
        loop.work += work
        if all(loop is not known for known in unit.loops):
            unit.loops.append(loop)
        return True

    def _comprehended(self, arg: ast.expr) -> Loop | None:
        """`send_mass_mail((... [u.email]) for u in User.objects.all())`: a comprehension
        over a query's rows handed straight to the call."""
        if not isinstance(arg, COMPREHENSIONS):
            return None
        first = arg.generators[0].iter
        is_query, bounded = self.query(first)
        over = dotted(first) or ast.unparse(first)[:60]
        return Loop(over, first.lineno, bounded=bounded) if is_query else None

    def _follow_loops(self, call: ast.Call, unit: Unit) -> None:
        """The loops of the project function an entry point calls: `fqdn(deployment)`,
        `self._notify(comment)`. Named at the call, one level deep."""
        if self.follow <= 0:
            return
        func = call.func
        targets: list[FunctionNode] = []
        if isinstance(func, ast.Name):
            targets = self.project.defined(func.id, method=False)
        elif isinstance(func, ast.Attribute) and dotted(func.value) in ("self", "cls"):
            targets = self.project.defined(func.attr, method=True)
        elif isinstance(func, ast.Attribute) and (imported := self._imported(func.value)):
            # `services.remind_unpaid()`, `Reminder().remind_unpaid()`, `svc.remind_unpaid()`
            # with `svc = Reminder()`: a function or method of the project's own modules
            targets = self.project.defined(func.attr, method=imported[:1].isupper())
        if len(targets) != 1 or id(targets[0]) not in self.project.homes:
            return
        target = targets[0]
        given = given_params(target, call, self.params)
        sub = Reader(self.project.homes[id(target)], self.project, given, self.follow - 1)
        inner = Unit(unit.kind, unit.name, unit.framework, unit.path, unit.line)
        sub.read(target, inner)
        for loop in inner.loops:
            if loop.work and not loop.bounded:
                over = f"{loop.over} (in {target.name}, line {loop.line})"
                unit.loops.append(Loop(over, call.lineno, loop.work))

    def _imported(self, expr: ast.expr) -> str:
        """The last name of the project module or class `expr` is (or makes an instance
        of), or ""."""
        if isinstance(expr, ast.Name) and isinstance(self.queries.get(expr.id), ast.Call):
            expr = self.queries[expr.id]
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            expr = expr.func
        if not isinstance(expr, ast.Name) or expr.id in self.params:
            return ""
        return expr.id if self.project.imported_here(self.module, expr.id) else ""

    def call(self, call: ast.Call, unit: Unit) -> None:
        """What a call outside any loop tells: timeouts, dispatches, waits, batches, cursors."""
        name, line = call_name(call), call.lineno
        qualified = self.module.qualify(call.func) or ""
        written = dotted(call.func)
        if self._untimed(call, qualified, name):
            unit.untimed_calls.append(Costly("http", written, line))
        if name in DISPATCH and isinstance(call.func, ast.Attribute):
            unit.dispatches.append(Costly("dispatch", written, line))
            # `task.apply_async((ids[i : i + 200],))`: one small job per chunk of the ids the
            # unit selected, the migration rule's own shape; any other job is a job class sent.
            unit.dispatches_job_class = unit.dispatches_job_class or not chunk_of_ids(call)
        if name in ("get", "wait", "join") and isinstance(call.func, ast.Attribute):
            target = call.func.value
            handle = isinstance(target, ast.Name) and self._handle(target.id)
            if handle or sent(target):
                unit.waits.append(Costly("dispatch", written, line))
        adds = name == "add" and "batch" in written
        if adds or (name in ("group", "chord") and (qualified.startswith("celery") or
                                                    name == "chord")):  # fmt: skip
            unit.adds_to_batch.append(Costly("dispatch", written, line))
        over = self._per_row(call) if adds or name in MANY else None
        if over is not None:
            unit.floods.append(Costly("dispatch", written, line))
            # the jobs are made while the unit walks every row: a loop whose work is a dispatch.
            # An entry point sending them to a queue of their own (or spread out) does what
            # the standard asks of a batch; a coordinator walking rows is wrong either way.
            if unit.kind == "job" or not self.spread:
                unit.loops.append(Loop(over, line, [Costly("dispatch", written, line)]))
        if name == "values_list" and keyword(call, "flat") is not None and id(call) not in self.one:
            is_query, bounded = self.query(call)
            if is_query and not bounded and any(is_id(a) for a in call.args):
                unit.plucks_all_ids.append(Costly("method", written, line))
        self._cursor(call, unit)

    def _cursor(self, call: ast.Call, unit: Unit) -> None:
        """A stored cursor read or written (`cache.get("last_id")`, in a loop or not)."""
        effect = cursor_call(call)
        if effect is not None:
            unit.cursor.append(Costly(effect, dotted(call.func), call.lineno))

    def _per_row(self, call: ast.Call) -> str | None:
        """`group(t.s(o.id) for o in Order.objects.all())`, or `group(members)` after a
        comprehension over a query filled `members`: one job per row. Names the rows."""
        for arg in call.args[:1]:
            if isinstance(arg, ast.GeneratorExp | ast.ListComp):
                first = arg.generators[0].iter
                is_query, bounded = self.query(first)
                if is_query and not bounded:
                    return dotted(first) or ast.unparse(first)[:60]
            if isinstance(arg, ast.Name) and arg.id in self.grown:
                filled = self.grown[arg.id]
                return None if filled.bounded else f"{filled.over} (filled into {arg.id})"
        return None

    def _sent(self, expr: ast.expr) -> bool:
        """A job's handle, as written or held in a name: `res`, `t.delay(1)`."""
        return (isinstance(expr, ast.Name) and self._handle(expr.id)) or sent(expr)

    def _handle(self, name: str) -> bool:
        held = self.queries.get(name)
        return held is not None and sent(held)

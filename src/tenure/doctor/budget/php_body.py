"""What one PHP method or closure body does, in the model's terms: loops over query rows
(foreach, ->each(), the rows of a ->chunk() callback) and their per-row work, dispatches, waits,
batch adds, cursors, progress reads. Calls into the project's own methods are followed two
levels deep: `$this->project->exportOrder($order)` costs what `exportOrder` costs."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from tree_sitter import Node

from tenure.doctor.budget.model import Costly, Loop, Unit, costly_name
from tenure.doctor.budget.php_effects import (
    CHUNKS,
    EACH,
    ROWS,
    WAITS,
    bounded,
    effect_of,
    is_query,
    is_rows,
)
from tenure.doctor.budget.php_shapes import (
    assigned_to,
    batch_add,
    builds_export,
    cursor_key,
    handed_to,
    job_class,
    of_batch,
    own_queue,
    polls_batch,
    queued_closures,
    self_dispatch,
    service_class,
    sync_dispatch,
    target_class,
    untimed,
)
from tenure.doctor.budget.php_syntax import (
    CALLS,
    CLASSES,
    CLOSURES,
    args,
    call_name,
    chain,
    class_nodes,
    closure_body,
    closure_params,
    methods_of,
    own,
    receiver,
    short,
)
from tenure.doctor.laravel.php import line, parse, string_value, text, walk

DEPTH = 2
FUNCTIONS = frozenset({"function_definition"})
DEFINES = re.compile(rb"function\s+&?\s*(\w+)\s*\(")
NOT_APP = {"factories", "seeders", "seeds", "Factories", "Seeders"}
FRAMEWORK = {"get", "first", "find", "where", "toArray", "map", "filter", "count", "sum", "each",
             "format", "load", "fresh", "refresh", "only", "except", "pluck", "value", "exists",
             "with", "render", "view", "json", "response", "redirect", "back", "validate",
             "authorize", "query", "all", "keys", "values", "isEmpty", "isNotEmpty"}  # fmt: skip
# Reads that run a query when made on a row's relation: `$order->lines()->sum('amount')`.
READS = {"sum", "count", "avg", "max", "min", "exists", "get", "first", "pluck", "value"}
# Collection calls that run a callback per row, when made on a query's rows.
MAPS = {"map", "flatMap", "mapWithKeys", "transform"}
# Console helpers that run a callback per item with a progress bar: `$this->withProgressBar(
# $rows, fn)`, Laravel Prompts' `progress('Label', $rows, fn)`.
PROGRESS_LOOPS = {"withProgressBar", "progress"}
# A stored cursor read (`Cache::get`, a settings row's `value()`) and written back.
CURSOR_READS = {"get", "value", "first", "pluck", "remember"}
CURSOR_WRITES = {"put", "forever", "set", "increment", "updateOrCreate", "update", "upsert"}
RELATIONS = {"hasMany", "belongsToMany", "morphMany", "morphToMany", "morphedByMany",
             "hasManyThrough"}  # fmt: skip


@dataclass
class Methods:
    """The project's own methods by name, for following calls."""

    bodies: dict[str, list[tuple[str, Node]]] = field(default_factory=dict)  # (class, body)
    sources: list[tuple[str, bytes]] = field(default_factory=list)  # every PHP file found
    _read: set[str] = field(default_factory=set)
    _looked_up: set[str] = field(default_factory=set)
    _defined: dict[str, list[tuple[str, bytes]]] | None = None  # method name -> its files
    _effects: dict[tuple[int, int], list[Costly]] = field(default_factory=dict)
    _functions: dict[str, list[Node]] = field(default_factory=dict)  # helper name -> bodies

    def add_file(self, path: str, classes: list[Node]) -> None:
        """Index a parsed file's methods; factories and seeders make test data, not the app."""
        self._read.add(path)
        if NOT_APP & set(path.replace(os.sep, "/").split("/")):
            return
        for cls in classes:
            owner = text(cls.child_by_field_name("name")).lower()
            for method in methods_of(cls):
                body = method.child_by_field_name("body")
                if body is not None:
                    name = text(method.child_by_field_name("name"))
                    self.bodies.setdefault(name, []).append((owner, body))

    def _candidates(self, name: str) -> list[tuple[str, Node]]:
        """Files not parsed yet that define `function NAME(` are parsed when a call needs
        them (one regex pass over every file says which)."""
        if self._defined is None:
            self._defined = {}
            for path, data in self.sources:
                if path.endswith(".php"):
                    for found in set(DEFINES.findall(data)):
                        self._defined.setdefault(found.decode(), []).append((path, data))
        if name not in self._looked_up:
            self._looked_up.add(name)
            for path, data in self._defined.get(name, []):
                if path not in self._read:
                    self.add_file(path, class_nodes(parse(data)))
        return self.bodies.get(name, [])

    def relation(self, name: str) -> bool:
        """Does a project method `name` return an Eloquent relation (`return
        $this->hasMany(...)`)?"""
        for body in self.bodies_of(name):
            for node in own(body):
                if node.type == "return_statement" and node.named_children:
                    returned = node.named_children[0]
                    if returned.type in CALLS and call_name(returned) in RELATIONS:
                        return True
        return False

    def bodies_of(self, name: str, hint: str = "") -> list[Node]:
        """The bodies of the methods named `name`; the one of the class named like the
        receiver when there is one."""
        candidates = self._candidates(name)
        named = [b for cls, b in candidates if hint and cls in (hint, hint.rstrip("s"))]
        return named or [b for _, b in candidates]

    def function_bodies(self, name: str) -> list[Node]:
        """The bodies of the project's plain functions named `name` (`givePoint()` in
        app/helpers.php, inside its `if (! function_exists(...))`)."""
        if name not in self._functions:
            self._candidates(name)
            found = self._functions.setdefault(name, [])
            for _, data in (self._defined or {}).get(name, []):
                for fn in walk(parse(data), FUNCTIONS, into=CLASSES | FUNCTIONS):
                    body = fn.child_by_field_name("body")
                    if text(fn.child_by_field_name("name")) == name and body is not None:
                        found.append(body)
        return self._functions[name]

    def function_effects(self, name: str, depth: int) -> list[Costly]:
        return self._costs(self.function_bodies(name)[:3], name, depth)

    def bodies_in(self, name: str, cls: str) -> list[Node]:
        """The body of `cls::name` only: a static call on a facade is not followed into a
        project method that merely shares its name."""
        return [b for owner, b in self._candidates(name) if owner == cls.lower()]

    def effects(self, name: str, depth: int, hint: str = "") -> list[Costly]:
        """What calling `name` costs. Several classes may define it: the one named like the
        receiver (`$asset->x()` -> Asset) is taken when there is one."""
        candidates = self._candidates(name)
        named = [b for cls, b in candidates if hint and cls in (hint, hint.rstrip("s"))]
        return self._costs(named or [b for _, b in candidates[:3]], name, depth)

    def _costs(self, bodies: list[Node], name: str, depth: int) -> list[Costly]:
        for body in bodies:
            key = (body.id, depth)
            if key not in self._effects:
                self._effects[key] = []  # a recursive call costs nothing more
                found: list[Costly] = []
                for node in own(body):
                    if node.type in CALLS:
                        found += call_effects(node, set(), self, depth)
                self._effects[key] = found[:1]
            if self._effects[key]:
                return [Costly(c.effect, c.what, c.line, c.via or name) for c in self._effects[key]]
        return []


def call_effects(call: Node, row: set[str], methods: Methods, depth: int) -> list[Costly]:
    effect = effect_of(call)
    if effect is not None:
        return [Costly(effect, callee(call), line(call))]
    if depth >= DEPTH:
        return []
    name = call_name(call)
    if call.type == "function_call_expression":
        # a project helper handed the row (`givePoint(new ReplyCreated($reply))`) costs
        # what its body costs
        written = text(call.child_by_field_name("arguments"))
        if depth > 0 or not any(r in written for r in row):
            return []
        found = methods.function_effects(name, depth + 1)
        return [Costly(c.effect, name, line(call), c.via) for c in found[:1]]
    if depth == 0 and name in READS and text(chain(call)[-1]) in row and is_query(call, {}):
        return [Costly("query", callee(call), line(call))]  # a query per row
    if name in FRAMEWORK:
        return []
    target = receiver(call)
    on = text(target) if target is not None else ""
    mentions_row = any(r in text(call.child_by_field_name("arguments")) for r in row) or on in row
    if depth == 0 and not (mentions_row or on in ("$this", "self", "static")):
        return []
    found = methods.effects(name, depth + 1, _hint(on))
    if not found and depth == 0 and mentions_row and costly_name(name):
        return [Costly("method", callee(call), line(call), f"{name}, by its name")]
    return [Costly(c.effect, callee(call), line(call), c.via) for c in found[:1]]


def _hint(receiver_text: str) -> str:
    """`$this->project` -> project, `$order` -> order: the class a receiver likely is."""
    last = receiver_text.rsplit("->", 1)[-1].lstrip("$").lower()
    return "" if last in ("this", "self", "static") else last


def callee(call: Node) -> str:
    """`$order->save`, `Mail::to(...)->send`, `file_put_contents`: the call without its
    arguments, for messages."""
    name = call_name(call)
    target = receiver(call)
    if target is None:
        return name
    joint = "::" if call.type == "scoped_call_expression" else "->"
    inner = short(target, 40) if target.type not in CALLS else callee(target) + "(...)"
    return f"{inner}{joint}{name}"


class Reader:
    def __init__(self, methods: Methods, given: set[str], follow: int = 1) -> None:
        self.methods = methods
        self.follow = follow  # how many calls deep the loops of the project's methods are read
        self.given = given  # `$this->` props and parameters: ranges within these are bounded
        self.held: dict[str, Node] = {}
        self.grown: dict[str, Loop] = {}  # `$jobs[] = ...`, `$csv .= ...` in a loop over rows

    def read(self, body: Node, unit: Unit) -> None:
        queued = queued_closures(body)  # `dispatch(static function () {...})` runs on a worker
        nodes = [n for n in own(body) if n.id not in queued]
        for node in nodes:
            if node.type == "assignment_expression":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and right is not None and left.type == "variable_name":
                    self.held[text(left)] = right
        in_loop: set[int] = set()
        for node in nodes:
            if node.id in in_loop:
                continue
            if node.type == "foreach_statement":
                self._foreach(node, unit, in_loop)
            elif node.type in CALLS:
                self._call(node, unit, in_loop)

    def _foreach(self, node: Node, unit: Unit, in_loop: set[int]) -> None:
        parts = node.named_children
        if len(parts) < 3:
            return
        over, value, body = parts[0], parts[1], parts[-1]
        if not (is_rows(over, self.held) or self._returns_rows(over) or self._relation_rows(over)):
            return
        names = {text(v) for v in ([value] if value.type != "pair" else value.named_children)}
        source = self.held.get(text(over), over)
        self._loop(short(over), line(node), body, names, unit, in_loop,
                   source.type in CALLS and bounded(source, self.given))  # fmt: skip

    def _loop(self, over: str, at: int, body: Node, row: set[str], unit: Unit,
              in_loop: set[int], is_bounded: bool) -> Loop:  # fmt: skip
        loop = Loop(over, at, bounded=is_bounded)
        for inner in [body, *own(body)]:  # an arrow function's body is one expression
            in_loop.add(inner.id)
            left = inner.child_by_field_name("left") if not is_bounded else None
            if left is not None and inner.type == "assignment_expression":
                if left.type == "subscript_expression" and left.named_children:
                    self.grown.setdefault(text(left.named_children[0]), loop)  # `$jobs[] = ...`
            elif (
                left is not None
                and inner.type == "augmented_assignment_expression"
                and (left.type == "variable_name")
            ):
                self.grown.setdefault(text(left), loop)  # `$csv .= "{$row->id},..."`
            if inner.type in CALLS:
                loop.work += call_effects(inner, row, self.methods, 0)
                self._cursor(inner, unit)
                if inner.type != "function_call_expression" and batch_add(inner):
                    unit.adds_to_batch.append(Costly("dispatch", short(inner), line(inner)))
                    unit.floods.append(Costly("dispatch", short(inner), line(inner)))
        unit.loops.append(loop)
        return loop

    def _call(self, call: Node, unit: Unit, in_loop: set[int]) -> None:
        name, at = call_name(call), line(call)
        written = short(call)
        effect = effect_of(call)
        written_args = [text(a) for a in args(call)]
        filled = [lp for var, lp in self.grown.items()
                  if any(re.search(re.escape(var) + r"\b", a) for a in written_args)]  # fmt: skip
        spread = effect == "dispatch" and own_queue(call)
        if filled and effect in ("mail", "http", "file", "dispatch") and not spread:
            # `Storage::put($path, $csv)` after a loop built $csv from every row: the rows
            # cost what the call costs. A batch of them on a queue of its own (or delayed)
            # is the standard's spread-out dispatch, not the unit's own work.
            filled[0].work.append(Costly(effect, callee(call), at))
        self._bulk_notify(call, unit, effect)
        if effect == "http" and untimed(call):
            unit.untimed_calls.append(Costly("http", callee(call), at))
        if effect == "dispatch":
            unit.dispatches.append(Costly("dispatch", written, at))
            if job_class(call):
                unit.dispatches_job_class = True
            if self_dispatch(call, unit.name):
                unit.self_dispatch.append(Costly("dispatch", written, at))
                if any(self._moved_on(a) for a in args(call)):
                    unit.redispatch_offset.append(Costly("dispatch", written, at))
        if name in ("download", "store", "raw") and builds_export(call):
            unit.exports.append(Costly("file", written, at))
        if name in WAITS or polls_batch(call, self.held):
            unit.waits.append(Costly("dispatch", written, at, target_class(call)))
        inline = sync_dispatch(call)
        if inline is not None:  # `X::dispatch(...)->onConnection('sync')` runs it right here
            unit.waits.append(Costly("dispatch", written, at, target_class(inline)))
        if batch_add(call):
            unit.adds_to_batch.append(Costly("dispatch", written, at))
            if filled:
                unit.floods.append(Costly("dispatch", written, at))  # a job per row, at once
        if name == "pluck" and args(call) and string_value(args(call)[0]) == "id":
            self._pluck(call, unit)
        if name == "progress" and not args(call) and of_batch(call, self.held):
            unit.progress_reads.append(Costly("method", written, at))
        self._cursor(call, unit)
        self._each_proxy(call, unit, in_loop)
        self._progress_loop(call, unit, in_loop)
        if name not in FRAMEWORK:
            self._follow_loops(call, unit)
        if name in EACH | CHUNKS | MAPS and call.type != "function_call_expression":
            closure = next((a for a in args(call) if a.type in CLOSURES), None)
            target = receiver(call)
            rows = target is not None and is_rows(target, self.held)  # $project->orders->each
            if closure is None or not (rows or (name not in MAPS and is_query(call, self.held))):
                return
            body, params = closure_body(closure), closure_params(closure)
            if body is None:
                return
            if name in EACH | MAPS:
                loop = self._loop(short(receiver(call) or call), at, body, set(params), unit,
                                  in_loop, bounded(call, self.given))  # fmt: skip
                into = assigned_to(call) if name in MAPS and not loop.bounded else None
                if into is not None:
                    self.grown.setdefault(into, loop)  # `$jobs = $rows->map(fn => new Job)`
                sent = handed_to(call) if name in MAPS and not loop.bounded else None
                if sent is not None and effect_of(sent) == "dispatch" and not own_queue(sent):
                    loop.work.append(Costly("dispatch", callee(sent), line(sent)))
            else:  # per chunk: the rows are the loops over its parameter inside
                for param in params[:1]:
                    self.held[param] = call  # `foreach ($rows as $row)` walks the query's rows

    def _progress_loop(self, call: Node, unit: Unit, in_loop: set[int]) -> None:
        """`$this->withProgressBar($images, function ($image) {...})`, `progress('Purging',
        $query->lazyById(), fn ($row) => ...)`: a loop over the rows, drawn as a bar."""
        given = args(call)
        if call_name(call) not in PROGRESS_LOOPS or len(given) < 2:
            return
        closure = next((a for a in given if a.type in CLOSURES), None)
        rows = next((a for a in given if is_rows(a, self.held)), None)
        body = closure_body(closure) if closure is not None else None
        if rows is None or closure is None or body is None:
            return
        source = self.held.get(text(rows), rows)
        is_bounded = source.type in CALLS and bounded(source, self.given)
        self._loop(short(rows), line(call), body, set(closure_params(closure)), unit, in_loop,
                   is_bounded)  # fmt: skip

    def _moved_on(self, arg: Node) -> bool:
        """`$this->offset + 100`, or `$next = $this->min + $this->chunk + 1` passed as
        `$next`: the job sends itself on from where it stopped."""
        held = self.held.get(text(arg)) if arg.type in ("argument", "variable_name") else None
        if held is None and arg.named_children and arg.named_children[0].type == "variable_name":
            held = self.held.get(text(arg.named_children[0]))
        written = text(held) if held is not None else text(arg)
        return "+" in written

    @staticmethod
    def _cursor(call: Node, unit: Unit) -> None:
        """A stored cursor read or written (`Cache::put('last_id', ...)`, in a loop or not)."""
        name = call_name(call)
        if name in CURSOR_READS | CURSOR_WRITES and cursor_key(call):
            what = Costly("method" if name in CURSOR_READS else "write", short(call), line(call))
            unit.cursor.append(what)

    def _bulk_notify(self, call: Node, unit: Unit, effect: str | None) -> None:
        """`Notification::send($users, new Digest)` with `$users` every row of a query: one
        notification per row, as a loop sending each would."""
        if effect != "mail" or call_name(call) not in ("send", "sendNow") or not args(call):
            return
        rows = args(call)[0]
        if not is_rows(rows, self.held):
            return
        source = self.held.get(text(rows), rows)
        is_bounded = source.type in CALLS and bounded(source, self.given)
        work = [Costly("mail", callee(call), line(call))]
        unit.loops.append(Loop(short(rows), line(call), work, bounded=is_bounded))

    def _each_proxy(self, call: Node, unit: Unit, in_loop: set[int]) -> None:
        """`$orders->each->delete()`: a higher-order message, one call per row."""
        proxy = receiver(call)
        if call.type != "member_call_expression" or proxy is None:
            return
        if proxy.type != "member_access_expression" or text(
            proxy.child_by_field_name("name")) not in EACH | MAPS:  # fmt: skip
            return
        rows = proxy.child_by_field_name("object")
        if rows is None or not is_rows(rows, self.held):
            return
        source = self.held.get(text(rows), rows)
        is_bounded = source.type in CALLS and bounded(source, self.given)
        loop = Loop(short(rows), line(call), bounded=is_bounded)
        loop.work += call_effects(call, {text(proxy)}, self.methods, 0)
        in_loop.add(call.id)
        unit.loops.append(loop)

    def _returns_rows(self, call: Node) -> bool:
        """`$this->threads()` whose body is `return $this->threadsRelation()->get();`."""
        target = receiver(call)
        if call.type != "member_call_expression" or target is None or text(target) != "$this":
            return False
        found = self.methods.bodies_of(call_name(call))
        if len(found) != 1:
            return False
        returns = [n for n in own(found[0]) if n.type == "return_statement" and n.named_children]
        return bool(returns) and all(
            is_rows(r.named_children[0], {}) or self._relation_rows(r.named_children[0])
            for r in returns
        )

    def _relation_rows(self, expr: Node) -> bool:
        """`$this->threadsRelation()->get()`, `$user->posts2()->cursor()`: the rows of a
        project method that returns a relation (`return $this->hasMany(...)`), whatever it
        is called."""
        if expr.type not in CALLS or call_name(expr) not in ROWS | CHUNKS:
            return False
        return any(
            step.type == "member_call_expression" and self.methods.relation(call_name(step))
            for step in chain(expr)[1:]
        )

    def _follow_loops(self, call: Node, unit: Unit) -> None:
        """The loops of the project method a unit calls (`$this->notifyUsers($users)`,
        `$this->user->deleteThreads()`), one level deep, named at the call; the method's
        parameters hold what the call passed."""
        target = receiver(call)
        if self.follow <= 0 or target is None:
            return
        on = text(target)
        made = service_class(target, self.held)
        # `$this->x()`, `$this->service->x()`, or a service the entry point was handed
        # (`handle(MilestoneWatcher $watcher)` calling `$watcher->awardReached()`).
        injected = target.type == "variable_name" and on in self.given and on not in self.held
        if call.type != "member_call_expression" and not made:
            return
        if on != "$this" and not (on.startswith("$this->") and on.count("->") == 1) and (
            not injected and not made):  # fmt: skip
            return
        bodies = (self.methods.bodies_in(call_name(call), made) if made
                  else self.methods.bodies_of(call_name(call), _hint(on)))  # fmt: skip
        declaration = bodies[0].parent if len(bodies) == 1 else None
        if declaration is None:
            return
        body = bodies[0]
        sub = Reader(self.methods, self.given, self.follow - 1)
        params = declaration.child_by_field_name("parameters")
        names = [text(p.child_by_field_name("name")) for p in (params.named_children if params
                 else []) if p.child_by_field_name("name") is not None]  # fmt: skip
        for name, arg in zip(names, args(call), strict=False):
            sub.held[name] = self.held.get(text(arg), arg)
        inner = Unit(unit.kind, unit.name, unit.framework, unit.path, unit.line)
        sub.read(body, inner)
        for loop in inner.loops:
            if loop.work and not loop.bounded:
                over = f"{loop.over} (in {call_name(call)}, line {loop.line})"
                unit.loops.append(Loop(over, line(call), loop.work))

    def _pluck(self, call: Node, unit: Unit) -> None:
        if is_query(call, self.held) and not bounded(call, self.given):
            unit.plucks_all_ids.append(Costly("method", short(call), line(call)))

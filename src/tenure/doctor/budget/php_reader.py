"""Laravel entry points and jobs: controller actions, route closures, Livewire actions, Artisan
commands (classes and routes/console.php closures), queued jobs (ShouldQueue handle(), with
Batchable members) and migrations (up()/down())."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from tree_sitter import Node

from tenure.doctor.budget.model import Code, Kind, Unit
from tenure.doctor.budget.php_body import Methods, Reader, call_effects
from tenure.doctor.budget.php_syntax import (
    CALLS,
    CLOSURES,
    args,
    call_name,
    chain,
    class_nodes,
    closure_body,
    own,
)
from tenure.doctor.laravel.php import line, name_of, parse, string_value, text, walk

# A PHP file that may hold an entry point's or a job's costly work: the rest are not parsed.
MARKERS = (b"foreach", b"->each(", b"chunk", b"dispatch", b"progress(", b"batch()",
           b"Http::", b"Cache::", b"cache(", b"->map(function", b"->map(fn",
           b"Excel::", b"Export(", b"->each->", b"->map->", b"->map(static",
           b"ShouldQueue", b"Notification::", b"GuzzleHttp", b"curl_exec", b"file_get_contents(",
           b"ProgressBar(", b"lazyById", b"extends Command", b"extends Controller",
           )  # fmt: skip  # a job, a bulk notification, an HTTP client: always read
ALIAS = re.compile(rb"^use\s+[\w\\]*?(\w+)\s+as\s+(\w+)\s*;", re.MULTILINE)
OUTSIDE = {"http", "mail", "file"}  # effects that leave the process
ROUTE_VERBS = {"get", "post", "put", "patch", "delete", "any", "match", "options"}
NOT_ACTIONS = {"__construct", "middleware", "rules", "messages", "boot", "booted", "render",
               "getListeners", "placeholder"}  # fmt: skip


def read_php(files: list[tuple[str, bytes]], base: str) -> Code:
    """`files`: (absolute path, bytes) of the project's PHP; paths shown relative to `base`."""
    code = Code()
    parsed: list[tuple[str, bytes, Node, list[Node]]] = []
    methods = Methods(sources=files)
    for path, data in files:
        if not path.endswith(".php") or not any(m in data for m in MARKERS):
            continue
        root = parse(data)
        classes = class_nodes(root)
        parsed.append((os.path.relpath(path, base), data, root, classes))
        methods.add_file(path, classes)
    handles: dict[str, tuple[bool, Node]] = {}  # class -> (queued, its handle())
    for rel, data, root, classes in parsed:
        units = _classes(rel, data, classes, methods, handles)
        if "routes" in rel.replace(os.sep, "/").split("/"):
            units += _route_closures(rel, root, methods)
        if b"Filament\\" in data:
            units += _filament_actions(rel, root, methods)
        if any(u.waits for u in units):
            aliases = {a.decode(): n.decode() for n, a in ALIAS.findall(data)}
            for unit in units:
                unit.waits = [replace(w, via=aliases.get(w.via, w.via)) for w in unit.waits]
        code.units += units
    code.has_growing_batches = any(u.adds_to_batch for u in code.units)
    events = {
        os.path.basename(path).removesuffix(".php")
        for path, _ in files
        if f"{os.sep}Events{os.sep}" in path
    }
    for unit in code.units:  # `SomethingHappened::dispatch()` fires an event, not a job
        unit.dispatches = [d for d in unit.dispatches if _scope(d.what) not in events]
        unit.self_dispatch = [d for d in unit.self_dispatch if _scope(d.what) not in events]
        for loop in unit.loops:
            loop.work = [w for w in loop.work if w.effect != "dispatch" or
                         _scope(w.what) not in events]  # fmt: skip
    wanted = {w.via for u in code.units for w in u.waits} - set(handles) - {""}
    seen = {rel for rel, _, _, _ in parsed}
    for path, data in files:  # the named job classes the marker filter left unparsed
        if wanted and any(f"class {n}".encode() in data for n in wanted):
            rel = os.path.relpath(path, base)
            if rel not in seen:
                _classes(rel, data, class_nodes(parse(data)), methods, handles)
    for unit in code.units:
        unit.waits = [w for w in unit.waits if _heavy(w.via, handles, methods)]
    return code


def _scope(written: str) -> str:
    """`OrderShipped` for `OrderShipped::dispatch($order)`."""
    return written.split("::", 1)[0].rsplit("\\", 1)[-1] if "::" in written else ""


def _heavy(name: str, handles: dict[str, tuple[bool, Node]], methods: Methods) -> bool:
    """Is running this job inline heavy work? It is when its handle() grows with the data or
    calls out (HTTP, mail, files), itself or one method down; a job that saves one record is
    not (laravel.io runs such jobs as synchronous commands). A job the doctor cannot name or
    find counts as heavy: unclear is not bounded."""
    if name not in handles:
        return True
    _, body = handles[name]
    probe = Unit("job", name, "", "", 0)
    Reader(methods, set()).read(body, probe)
    if any(lp.work and not lp.bounded for lp in probe.loops):
        return True
    calls = (n for n in own(body) if n.type in CALLS)
    return any(c.effect in OUTSIDE for n in calls for c in call_effects(n, set(), methods, 1))


def _classes(rel: str, data: bytes, classes: list[Node], methods: Methods,
             handles: dict[str, tuple[bool, Node]]) -> list[Unit]:  # fmt: skip
    out: list[Unit] = []
    for cls in classes:
        if cls.type == "trait_declaration":
            continue
        name = text(cls.child_by_field_name("name")) or os.path.basename(rel).removesuffix(".php")
        parent = ""
        interfaces: set[str] = set()
        for child in cls.named_children:
            if child.type == "base_clause":
                parent = name_of(child.named_children[0]) if child.named_children else ""
            elif child.type == "class_interface_clause":
                interfaces = {name_of(n) for n in child.named_children}
        body = cls.child_by_field_name("body")
        if body is None:
            continue
        for method in body.named_children:
            if method.type == "method_declaration" and text(
                    method.child_by_field_name("name")) == "handle":  # fmt: skip
                handle = method.child_by_field_name("body")
                if handle is not None:
                    handles[name] = ("ShouldQueue" in interfaces, handle)
        traits = {name_of(n) for u in body.named_children if u.type == "use_declaration"
                  for n in u.named_children}  # fmt: skip
        role = _role(rel, data, name, parent, interfaces)
        if role is None:
            continue
        kind, framework, wanted = role
        for method in body.named_children:
            if method.type != "method_declaration":
                continue
            method_name = text(method.child_by_field_name("name"))
            public = not any(text(m) in ("private", "protected") for m in method.named_children
                             if m.type == "visibility_modifier")  # fmt: skip
            if wanted is None and (not public or method_name in NOT_ACTIONS):
                continue
            if wanted is not None and method_name not in wanted:
                continue
            joint = "@" if kind == "request" else "::"
            unit = _unit(kind, f"{name}{joint}{method_name}", framework, rel, method, methods)
            if unit is not None:
                unit.is_member = kind == "job" and "Batchable" in traits
                out.append(unit)
    return out


def _role(rel: str, data: bytes, name: str, parent: str,
          interfaces: set[str]) -> tuple[Kind, str, set[str] | None] | None:  # fmt: skip
    folders = rel.replace(os.sep, "/").split("/")
    if "ShouldQueue" in interfaces:
        return "job", "Laravel job", {"handle"}
    if parent == "Migration" or ("migrations" in folders and parent.endswith("Migration")):
        return "migration", "Laravel migration", {"up", "down"}
    if (parent == "Command" and b"Illuminate\\Console" in data) or "Commands" in folders:
        return "command", "Artisan command", {"handle"}
    if parent == "Component" and (b"Livewire" in data or "Livewire" in folders):
        return "request", "Livewire action", None
    if name.endswith("Controller") or parent.endswith("Controller"):
        return "request", "Laravel controller action", None
    return None


def _route_closures(rel: str, root: Node, methods: Methods) -> list[Unit]:
    out: list[Unit] = []
    for call in walk(root, frozenset({"scoped_call_expression"})):
        scope = name_of(call.child_by_field_name("scope"))
        name = call_name(call)
        if scope == "Route" and name in ROUTE_VERBS:
            kind: Kind = "request"
            framework = "route closure"
        elif scope == "Artisan" and name == "command":
            kind, framework = "command", "Artisan closure command"
        else:
            continue
        closure = next((a for a in args(call) if a.type in CLOSURES), None)
        if closure is None:
            continue
        label = text(args(call)[0]) if args(call) else "?"
        unit = _unit(kind, f"{scope}::{name}({label})", framework, rel, closure, methods)
        if unit is not None:
            out.append(unit)
    return out


def _filament_actions(rel: str, root: Node, methods: Methods) -> list[Unit]:
    """`Action::make('ban')->action(function (User $user) {...})`: a Filament table or page
    action runs inside the admin's request, like a Livewire action (Filament is Livewire)."""
    out: list[Unit] = []
    for call in walk(root, frozenset({"member_call_expression"})):
        if call_name(call) != "action":
            continue
        closure = next((a for a in args(call) if a.type in CLOSURES), None)
        if closure is None:
            continue
        label = next((string_value(args(s)[0]) for s in chain(call)
                      if s.type == "scoped_call_expression" and call_name(s) == "make"
                      and args(s)), None)  # fmt: skip
        unit = _unit("request", f"Action::make({label or '?'})", "Filament action", rel,
                     closure, methods)  # fmt: skip
        if unit is not None:
            out.append(unit)
    return out


def _unit(kind: Kind, name: str, framework: str, rel: str, node: Node,
          methods: Methods) -> Unit | None:  # fmt: skip
    body = node.child_by_field_name("body") if node.type == "method_declaration" else (
        closure_body(node))  # fmt: skip
    if body is None:
        return None
    given = {"$this->"} if kind == "job" else set()
    params = node.child_by_field_name("parameters")
    if params is not None:
        given |= {text(p.child_by_field_name("name")) for p in params.named_children
                  if p.child_by_field_name("name") is not None}  # fmt: skip
    unit = Unit(kind, name, framework, rel, line(node))
    Reader(methods, given).read(body, unit)
    if unit.floods and any(w in (body.text or b"") for w in (b"onQueue", b"delay")):
        unit.floods = []
    return unit

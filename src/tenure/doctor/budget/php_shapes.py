"""The small Laravel shapes the PHP body reader recognises: where a chain's value goes (a
variable, a call's argument), a dispatch on the sync connection or a queue of its own, an HTTP
call without a timeout, an export built now, batch adds, job classes, self-dispatch, cursor keys."""

from __future__ import annotations

import re

from tree_sitter import Node

from tenure.doctor.budget.php_effects import effect_of
from tenure.doctor.budget.php_syntax import CALLS, CLOSURES, args, call_name, chain, own, receiver
from tenure.doctor.laravel.php import string_value, text

HTTP_VERBS = {"get", "post", "put", "patch", "delete", "head", "send", "request"}
BUDGET_SECONDS = 5
GUZZLE_TIMEOUT = re.compile(r"""['"]timeout['"]\s*=>\s*(\d+(?:\.\d+)?)""")
# `last_user_id`, `orders_last_synced_id`: the last id a run reached, under any name.
LAST_ID = re.compile(r"last_\w*id\b")
CURSOR_WORDS = ("last_id", "lastid", "last-id", "offset", "cursor", "last_processed", "position")


def assigned_to(call: Node) -> str | None:
    """`$jobs = Order::all()->map(...)->all();`: the variable a chain ending in `call` fills."""
    node = call
    while node.parent is not None and node.parent.type in CALLS:
        node = node.parent
    parent = node.parent
    left = parent.child_by_field_name("left") if parent is not None else None
    if parent is None or parent.type != "assignment_expression" or left is None:
        return None
    return text(left) if left.type == "variable_name" else None


def handed_to(call: Node) -> Node | None:
    """`Bus::batch(Order::all()->map(...))`: the call a chain ending in `call` is passed to."""
    node = call
    while node.parent is not None and node.parent.type in CALLS:
        node = node.parent
    up = node.parent
    while up is not None and up.type in ("argument", "arguments"):
        up = up.parent
    return up if up is not None and up.type in CALLS and up is not node else None


def sync_dispatch(call: Node) -> Node | None:
    """The dispatch in `X::dispatch(...)->onConnection('sync')`, `dispatch(new X)->
    onConnection('sync')`: the sync connection runs the job inline, as dispatchSync does."""
    given = args(call)
    if call_name(call) != "onConnection" or not given or string_value(given[0]) != "sync":
        return None
    for step in chain(call)[1:]:
        if step.type in CALLS and effect_of(step) == "dispatch":
            return step
    return None


def own_queue(call: Node) -> bool:
    """`Bus::batch($jobs)->onQueue('exports')->dispatch()`, `->delay(...)`: the jobs go to a
    queue of their own or are spread out, as the standard asks of a batch."""
    node: Node | None = call
    while node is not None and node.type in CALLS:
        if call_name(node) in ("onQueue", "delay"):
            return True
        node = node.parent
    return False


def untimed(call: Node) -> bool:
    """An HTTP call with no timeout of its own: `Http::get()` (the facade waits 30 s by
    default, past the budget), Guzzle's `->get()` with no 'timeout' option,
    `file_get_contents('https://...')`. `Http::timeout(3)->get()` is bounded."""
    name = call_name(call)
    if call.type == "function_call_expression":
        return name == "file_get_contents"
    if name not in HTTP_VERBS:
        return False
    steps = chain(call)
    limits = [s for s in steps if s.type in CALLS and call_name(s) == "timeout"]
    if limits:  # Http::timeout(20): defined, but past the budget the request must answer in
        given = text(args(limits[0])[0]) if args(limits[0]) else ""
        return given.isdigit() and int(given) > BUDGET_SECONDS
    if any(s.type in CALLS and call_name(s) == "connectTimeout" for s in steps):
        return False
    written = text(call.child_by_field_name("arguments")).lower()
    option = GUZZLE_TIMEOUT.search(written)  # ['timeout' => 30]: Guzzle's own option
    if option is not None:
        return float(option.group(1)) > BUDGET_SECONDS
    return "timeout" not in written


def builds_export(call: Node) -> bool:
    """Laravel Excel building the file now: `Excel::download(new UsersExport, ...)`,
    `(new UsersExport)->download(...)`, `->store(...)`. `->queue(...)` and `Excel::queue`
    build it on a worker."""
    target = receiver(call)
    if target is None:
        return False
    if call.type == "scoped_call_expression":
        return text(target) == "Excel"
    while target.type == "parenthesized_expression" and target.named_children:
        target = target.named_children[0]
    if target.type != "object_creation_expression" or not target.named_children:
        return False
    return text(target.named_children[0]).endswith("Export")


def queued_closures(body: Node) -> set[int]:
    """The nodes of closures handed to dispatch(): the migration rule's static closure per
    chunk runs on a worker, so its loop is a job's work, not the unit's."""
    out: set[int] = set()
    for node in own(body):
        if node.type in CALLS and call_name(node) == "dispatch":
            for closure in (a for a in args(node) if a.type in CLOSURES):
                out |= {n.id for n in own(closure)} | {closure.id}
    return out


def of_batch(call: Node, held: dict[str, Node]) -> bool:
    """`Bus::findBatch($id)->progress()`, `$batch->progress()`: a batch's own count, not a
    record's `$export->progress()` measured against a total stored once."""
    target = receiver(call)
    written = text(target) if target is not None else ""
    if target is not None and target.type == "variable_name" and written in held:
        written = text(held[written])
    return "batch" in written.lower()


def target_class(call: Node) -> str:
    """The job class a dispatch names: `X::dispatchSync()`, `dispatch_sync(new X)`,
    `$this->dispatchSync(X::fromRequest(...))`; "" when it is not written there."""
    if call.type == "scoped_call_expression":
        scope = text(call.child_by_field_name("scope"))
        if scope not in ("Bus", "self", "static"):
            return scope.rsplit("\\", 1)[-1]
    for arg in args(call)[:1]:
        if arg.type == "object_creation_expression" and arg.named_children:
            return text(arg.named_children[0]).rsplit("\\", 1)[-1]
        if arg.type == "scoped_call_expression":
            return text(arg.child_by_field_name("scope")).rsplit("\\", 1)[-1]
    return ""


def batch_add(call: Node) -> bool:
    """`$this->batch()->add(...)`."""
    if call_name(call) != "add":
        return False
    target = receiver(call)
    return target is not None and target.type in CALLS and call_name(target) == "batch"


def job_class(call: Node) -> bool:
    """`ExportJob::dispatch()`, `dispatch(new ExportJob)`, `Bus::batch([new A])`: not a closure."""
    if call.type == "scoped_call_expression" and call_name(call) == "dispatch":
        return True
    return any(
        a.type == "object_creation_expression"
        or (a.type == "array_creation_expression" and "new " in text(a))
        for a in args(call)
    )


def self_dispatch(call: Node, unit_name: str) -> bool:
    own_class = unit_name.split("::")[0].split("@")[0]
    if call.type == "scoped_call_expression":
        scope = text(call.child_by_field_name("scope"))
        return scope in ("self", "static", own_class)
    return any(
        text(a).startswith(("new self", "new static", f"new {own_class}(")) for a in args(call)
    )


def cursor_key(call: Node) -> bool:
    """`Cache::get('last_id')`, `Setting::where('key', 'orders_last_id')->value('value')`,
    `Setting::updateOrCreate(['key' => 'orders_last_id'], ...)`: a store keyed by a cursor."""
    steps = chain(call)
    root = text(steps[-1]).lower()
    if not ("cache" in root or "redis" in root or "setting" in root or "option" in root):
        return False
    # the key is the first argument; of `where('key', 'orders_last_id')`, the second
    keys = [a for s in steps if s.type in CALLS
            for a in args(s)[: 2 if call_name(s) in ("where", "firstWhere") else 1]]  # fmt: skip
    written = [text(k).lower() for k in keys]
    return any(w in k for k in written for w in CURSOR_WORDS) or any(
        LAST_ID.search(k) for k in written)  # fmt: skip


# What a loop asks of a batch while it waits for it to end.
BATCH_POLLS = {"finished", "cancelled", "hasPendingJobs", "pendingJobs"}
WAIT_LOOPS = {"while_statement", "do_statement", "for_statement"}


def polls_batch(call: Node, held: dict[str, Node]) -> bool:
    """`while (! $batch->fresh()->finished()) { sleep(1); }`: the request holds until the
    batch it dispatched is done. One status read (a progress endpoint) is not a wait."""
    if call_name(call) not in BATCH_POLLS or not of_batch(call, held):
        return False
    node = call.parent
    while node is not None and node.type not in WAIT_LOOPS:
        if node.type in ("method_declaration", "function_definition", "anonymous_function"):
            return False
        node = node.parent
    return node is not None


def service_class(target: Node, held: dict[str, Node]) -> str:
    """The project class a call is made on, when the code names it: `app(Reminder::class)`,
    `resolve(Reminder::class)`, `(new Reminder())`, `$svc` holding `new Reminder`, or the
    scope of a static call `Reminder::remindAll()`. "" when it does not."""
    if target.type == "variable_name" and text(target) in held:
        target = held[text(target)]
    while target.type == "parenthesized_expression" and target.named_children:
        target = target.named_children[0]
    if target.type == "object_creation_expression" and target.named_children:
        return text(target.named_children[0]).rsplit("\\", 1)[-1]
    if target.type == "function_call_expression" and call_name(target) in ("app", "resolve"):
        given = args(target)
        if given and given[0].type == "class_constant_access_expression":
            return text(given[0]).split("::", 1)[0].rsplit("\\", 1)[-1]
    if target.type in ("name", "qualified_name"):
        written = text(target).rsplit("\\", 1)[-1]
        return "" if written in ("self", "static", "parent") else written
    return ""

"""One level into the project's own service classes. A job's handle() often makes its HTTP
call through a service: `$this->sms->send()` (injected into the constructor, or a typed
property), `$sms->send()` (injected into handle()), `app(SmsService::class)->send()`. The
HTTP calls that service method makes (and the methods of its own it calls) are the job's.

Only one level, and only classes the project defines: a service calling another service, an
interface bound in a provider, or a vendor class stays "not followed" in the report."""

from __future__ import annotations

import re

from tree_sitter import Node

from tenure.doctor.laravel.http_calls import HttpCall, http_calls
from tenure.doctor.laravel.jobs import SCALARS, CodeScan, JobClass, lookup, qualify, reachable
from tenure.doctor.laravel.php import text, walk

CONTAINED = re.compile(
    r"(?:app|resolve|App::make|\\?Illuminate\\Support\\Facades\\App::make|\$this->app->make"
    r"|app\(\)->make)"
    r"\(\s*(?:\\?([\w\\]+)::class|['\"]\\?([\w\\]+)['\"])\s*\)"
)
CREATED = re.compile(r"new\s+(\\?[\w\\]+)\s*(?:\(.*\))?", re.DOTALL)
PARAMETERS = frozenset({"simple_parameter", "property_promotion_parameter"})


def follow(job: JobClass, scan: CodeScan) -> None:
    """Add to `job.calls` the HTTP calls of the service methods its handle() reaches, and drop
    the "not followed" note of each call so followed."""
    if "handle" not in job.method_nodes:
        return
    properties = _property_types(job)
    parameters = _typed(job.method_nodes["handle"])
    methods = reachable(job.method_nodes, "handle")
    _assigned(methods, properties, parameters)
    seen = {(c.source.path, c.source.line, c.call) for c in job.calls}
    for method in methods:
        for call in walk(method, frozenset({"member_call_expression"})):
            target = call.child_by_field_name("object")
            called = call.child_by_field_name("name")
            if target is None or called is None or called.type != "name":
                continue
            kind = _type_of(target, properties, parameters, job, scan)
            found = lookup(scan, qualify(kind, job.namespace, job.imports) or "") if kind else None
            if found is None or found is job or text(called) not in found.method_nodes:
                continue
            for http in _calls_of(found, text(called)):
                key = (http.source.path, http.source.line, http.call)
                if key not in seen:
                    seen.add(key)
                    shown = f"{http.call} in {found.name}::{text(called)}()"
                    job.calls.append(HttpCall(shown[:120], http.timeout, http.source, http.library))
            written = text(call).split("(")[0][:60] + "()"
            job.unfollowed = [u for u in job.unfollowed if not u.startswith(written + " (")]


def _receiver_type(
    target: str, properties: dict[str, str], parameters: dict[str, str]
) -> str | None:
    if target.startswith("$this->") and target[7:] in properties:
        return properties[target[7:]]
    if target in parameters:
        return parameters[target]
    return _made(target)


def _made(expression: str) -> str | None:
    """The class an expression makes: `app(X::class)`, `app()->make('App\\X')`, `new X(...)`
    (a class named in a string is always written in full)."""
    expression = expression.strip()
    while expression.startswith("(") and expression.endswith(")"):  # `(new X(...))->send()`
        expression = expression[1:-1].strip()
    contained = CONTAINED.fullmatch(expression)
    if contained:
        return contained.group(1) or "\\" + contained.group(2)
    created = CREATED.fullmatch(expression)
    return created.group(1) if created else None


def _type_of(
    target: Node,
    properties: dict[str, str],
    parameters: dict[str, str],
    job: JobClass,
    scan: CodeScan,
) -> str | None:
    """The receiver's class; through a fluent call (`$this->discord->user($u)->addRoles()`)
    when the service method it goes through returns `$this`."""
    if target.type != "member_call_expression":
        return _receiver_type(text(target), properties, parameters)
    inner = target.child_by_field_name("object")
    name = target.child_by_field_name("name")
    kind = _type_of(inner, properties, parameters, job, scan) if inner is not None else None
    found = lookup(scan, qualify(kind, job.namespace, job.imports) or "") if kind else None
    method = found.method_nodes.get(text(name)) if found is not None and name else None
    return kind if method is not None and "return $this;" in text(method) else None


def _assigned(methods: list[Node], properties: dict[str, str], parameters: dict[str, str]) -> None:
    """`$this->discord = app()->make(DiscordService::class)` and `$sms = new SmsService()` in
    the methods handle() reaches: the property's or the variable's class from then on."""
    for method in methods:
        for assignment in walk(method, frozenset({"assignment_expression"})):
            left = text(assignment.child_by_field_name("left"))
            kind = _made(text(assignment.child_by_field_name("right")))
            if kind is None:
                continue
            if left.startswith("$this->"):
                properties.setdefault(left[7:], kind)
            elif left.startswith("$"):
                parameters.setdefault(left, kind)


def _calls_of(service: JobClass, method: str) -> list[HttpCall]:
    if service.evaluator is None:
        return []
    out: list[HttpCall] = []
    for node in reachable(service.method_nodes, method):
        out += http_calls(node, service.rel, service.evaluator, service.guzzle, service.builders,
                          curl_class=service.curl_class)  # fmt: skip
    return out


def _typed(method: Node) -> dict[str, str]:
    """{"$sms": "SmsService"} for a method's parameters declared with a class type."""
    out: dict[str, str] = {}
    parameters = method.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else []:
        if parameter.type not in PARAMETERS:
            continue
        kind = parameter.child_by_field_name("type")
        name = parameter.child_by_field_name("name")
        written = text(kind).lstrip("?") if kind is not None else ""
        if name is not None and written and written.lstrip("\\") not in SCALARS:
            out[text(name)] = written
    return out


def _property_types(job: JobClass) -> dict[str, str]:
    """{"sms": "SmsService"}: typed properties, promoted constructor parameters, and
    `$this->sms = $sms` from a typed constructor parameter."""
    out: dict[str, str] = {}
    construct = job.method_nodes.get("__construct")
    body = construct.parent if construct is not None else None
    if body is None:
        body = next(iter(job.method_nodes.values())).parent if job.method_nodes else None
    for declaration in body.named_children if body is not None else []:
        if declaration.type != "property_declaration":
            continue
        kind = next((c for c in declaration.named_children if c.type == "named_type"), None)
        for element in declaration.named_children:
            if kind is not None and element.type == "property_element":
                out[text(element.named_children[0]).lstrip("$")] = text(kind)
    if construct is None:
        return out
    parameters = _typed(construct)
    promoted = construct.child_by_field_name("parameters")
    for parameter in promoted.named_children if promoted is not None else []:
        name = parameter.child_by_field_name("name")
        if parameter.type == "property_promotion_parameter" and text(name) in parameters:
            out[text(name).lstrip("$")] = parameters[text(name)]
    for assignment in walk(construct, frozenset({"assignment_expression"})):
        left = text(assignment.child_by_field_name("left"))
        right = text(assignment.child_by_field_name("right"))
        if left.startswith("$this->") and right in parameters:
            out[left[7:]] = parameters[right]
    return out

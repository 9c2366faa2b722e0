"""The HTTP calls a PHP method makes and how long each may wait: Laravel's `Http::` facade
(and a builder kept on a property), Guzzle, php-curl-class, curl_exec and the stream readers."""

from __future__ import annotations

from tree_sitter import Node

from tenure.doctor.laravel.curl_class import curl_class_calls
from tenure.doctor.laravel.php import (
    Evaluator,
    array_items,
    as_number,
    call_args,
    line,
    name_of,
    text,
    walk,
)
from tenure.doctor.laravel.streams import STREAM_READERS, HttpCall, stream_call
from tenure.doctor.model import Source, Value

HTTP_VERBS = {"get", "post", "put", "patch", "delete", "head", "send"}


def http_builders(methods: dict[str, Node]) -> dict[str, list[Node]]:
    """`$this->http = Http::timeout(30)->retry(3, 1000)->withHeaders([...])` in the constructor:
    the property's builder chain (the `Http::` call first), which `$this->http->get()` sends."""
    construct = methods.get("__construct")
    out: dict[str, list[Node]] = {}
    for assignment in walk(construct, frozenset({"assignment_expression"})) if construct else []:
        left = text(assignment.child_by_field_name("left"))
        right = assignment.child_by_field_name("right")
        scoped = _http_call_in(right) if right is not None else None
        if not left.startswith("$this->") or scoped is None:
            continue
        chain = [scoped]
        while (
            chain[-1] != right
            and chain[-1].parent is not None
            and (chain[-1].parent.type == "member_call_expression")
        ):
            chain.append(chain[-1].parent)
        out[left[7:]] = chain
    return out


def _http_call_in(node: Node) -> Node | None:
    scopes = walk(node, frozenset({"scoped_call_expression"}))
    return next((n for n in scopes if name_of(n.child_by_field_name("scope")) == "Http"), None)


def http_calls(
    method: Node,
    rel: str,
    ev: Evaluator,
    guzzle: frozenset[str],
    builders: dict[str, list[Node]] | None = None,
    *,
    curl_class: bool = False,
) -> list[HttpCall]:
    """`guzzle`: the names the file imports GuzzleHttp\\Client as (`Client`, an alias);
    `builders`: the class's properties holding an Http builder (http_builders());
    `curl_class`: the file imports php-curl-class's Curl\\Curl (curl_class.py)."""
    found: list[HttpCall] = []
    body = text(method)
    for call in walk(method, frozenset({"member_call_expression"})) if builders else []:
        held = text(call.child_by_field_name("object")).removeprefix("$this->")
        verb = text(call.child_by_field_name("name"))
        if builders and held in builders and verb in HTTP_VERBS:
            chain = builders[held]
            names = [text(n.child_by_field_name("name")) for n in chain]
            at = Source(rel, line(call))
            timeout = _http_timeout(chain, names, ev, at)
            found.append(HttpCall(f"$this->{held}->{verb}()", timeout, at, "Http"))
    for scoped in walk(method, frozenset({"scoped_call_expression"})):
        if name_of(scoped.child_by_field_name("scope")) != "Http":
            continue
        chain = [scoped]
        while chain[-1].parent is not None and chain[-1].parent.type == "member_call_expression":
            chain.append(chain[-1].parent)
        names = [text(n.child_by_field_name("name")) for n in chain]
        if not HTTP_VERBS & set(names):
            continue  # a builder kept in a variable: its later use is not followed
        at = Source(rel, line(scoped))
        shown = f"Http::{'()->'.join(names)}()"
        timeout = _http_timeout(chain, names, ev, at)
        found.append(HttpCall(shown[:80], timeout, at, "Http"))
    guzzle_bounded = "'timeout'" in body or '"timeout"' in body or "TIMEOUT" in body
    for creation in walk(method, frozenset({"object_creation_expression"})):
        written = text(creation.named_children[0]) if creation.named_children else ""
        is_guzzle = written.endswith("GuzzleHttp\\Client") or written in guzzle
        if is_guzzle and not guzzle_bounded and _sends(creation, body):
            # Reported where the client is made, where its timeout is set (a tuning-set
            # convention, firefly-iii's DownloadExchangeRates), not on each request.
            at = Source(rel, line(creation))
            found.append(HttpCall("new GuzzleHttp\\Client()", _unbounded("Guzzle"), at, "Guzzle"))
    found += curl_class_calls(method, rel, curl_class)
    calls = list(walk(method, frozenset({"function_call_expression"})))
    # A curl handle's timeout is set on the handle curl_init() makes: the finding goes there.
    inits = [line(c) for c in calls if name_of(c.child_by_field_name("function")) == "curl_init"]
    for call in calls:
        function = name_of(call.child_by_field_name("function"))
        at = Source(rel, line(call))
        made = max((n for n in inits if n <= line(call)), default=line(call))
        if function == "curl_exec" and "CURLOPT_TIMEOUT" not in body:
            found.append(HttpCall("curl_exec()", _unbounded("curl"), Source(rel, made), "curl"))
        elif function == "curl_exec":
            # The handle's own CURLOPT_TIMEOUT, set between its curl_init() and this exec;
            # one that cannot be read (a method's return) is left unjudged.
            at_exec = line(call)
            timeouts = [
                v
                for v in _curl_timeouts(method, rel, ev)
                if made <= (v.source.line or 0) <= at_exec
            ]
            if timeouts:
                found.append(HttpCall("curl_exec()", timeouts[-1], Source(rel, made), "curl"))
        elif function in STREAM_READERS:
            stream = stream_call(call, function, body, ev, at)
            if stream is not None:
                found.append(stream)
    return found


CURL_TIMEOUTS = {"CURLOPT_TIMEOUT": 1.0, "CURLOPT_TIMEOUT_MS": 0.001}


def _curl_timeouts(method: Node, rel: str, ev: Evaluator) -> list[Value]:
    """The readable CURLOPT_TIMEOUT(_MS) a method sets, in `curl_setopt_array($ch, [...])` or
    `curl_setopt($ch, CURLOPT_TIMEOUT, 10 * 60)`, in line order."""
    pairs: list[tuple[Node, Node]] = []
    for element in walk(method, frozenset({"array_element_initializer"})):
        children = element.named_children
        if len(children) >= 2:
            pairs.append((children[0], children[-1]))
    for call in walk(method, frozenset({"function_call_expression"})):
        args = call_args(call)
        if name_of(call.child_by_field_name("function")) == "curl_setopt" and len(args) == 3:
            pairs.append((args[1], args[2]))
    out = []
    for key, value in pairs:
        scale = CURL_TIMEOUTS.get(text(key))
        resolved = ev.eval(value) if scale else None
        amount = as_number(resolved.value) if resolved and resolved.known else None
        if scale and amount is not None and amount > 0:  # 0: curl waits forever
            out.append(Value(text(key), amount * scale, "s", Source(rel, line(value))))
        elif scale and amount == 0:
            out.append(Value(text(key), None, "s", Source(rel, line(value), "0: no limit")))
    return sorted(out, key=lambda v: v.source.line or 0)


def _sends(creation: Node, body: str) -> bool:
    """A client kept in `$var` sends only if `$var->` is used; one passed as an argument
    (`new TenantController(new Client, ...)`) sends where it is received, not here; an inline
    one always does."""
    parent = creation.parent
    if parent is not None and parent.type == "argument":
        return False
    if parent is None or parent.type != "assignment_expression":
        return True
    target = text(parent.child_by_field_name("left"))
    return f"{target}->" in body


def _unbounded(library: str) -> Value:
    return Value(f"{library} timeout", None, "s", Source(note=f"{library} has no default timeout"))


def _http_timeout(chain: list[Node], names: list[str], ev: Evaluator, at: Source) -> Value:
    """The longest the chain may wait: its timeout, times the attempts of ->retry(n)."""
    bound = _http_single(chain, names, ev, at)
    for node, name in zip(chain, names, strict=True):
        args = call_args(node)
        times = as_number(ev.eval(args[0]).value) if name == "retry" and args else None
        if times and times > 1 and bound.amount:
            label = f"{bound.label} x retry({times:g})"
            return Value(
                label, bound.amount * times, "s", Source(at.path, line(node), bound.source.note)
            )
    return bound


def _http_single(chain: list[Node], names: list[str], ev: Evaluator, at: Source) -> Value:
    for node, name in zip(chain, names, strict=True):
        args = call_args(node)
        if name == "timeout" and args:
            resolved = ev.eval(args[0])
            amount = as_number(resolved.value)
            if resolved.known and amount is not None:
                return Value("Http::timeout()", amount or None, "s", Source(at.path, line(node)))
            return Value("Http::timeout()", 0.0, "s", Source(at.path, line(node), "unresolved"))
        if name == "withOptions" and args and args[0].type == "array_creation_expression":
            for key, value, _ in array_items(args[0]):
                if key == "timeout":
                    amount = as_number(ev.eval(value).value)
                    return Value(
                        "Http timeout option", amount or None, "s", Source(at.path, line(node))
                    )
    return Value(
        "Http client default timeout",
        30.0,
        "s",
        Source(note="Laravel HTTP client default since 9.x, no ->timeout()"),
    )


__all__ = ["HttpCall", "http_builders", "http_calls"]

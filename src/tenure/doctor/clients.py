"""Network calls in job code and the timeout that bounds each one.

The defaults below are the libraries' own (read from their documentation); a wrong default
turns the rule into noise, so a call is reported only when its bound is known: explicit,
or the library's documented default. An unresolvable `timeout=settings.X` is left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from tenure.doctor.astutil import FunctionNode, Module, Num, called_helpers, keyword, number
from tenure.doctor.model import ClientCall, Source, Value


@dataclass(frozen=True)
class Spec:
    library: str
    keyword: str  # the argument that carries the timeout
    position: int | None  # its positional index, when it can be passed positionally
    default: float | None  # what applies when it is absent; None: nothing, waits forever
    default_note: str
    style: str = "plain"  # plain | aiohttp | boto


_VERBS = ("get", "post", "put", "patch", "delete", "head", "options", "request")
_REQUESTS = Spec("requests", "timeout", None, None, "requests has no default timeout")
_HTTPX = Spec("httpx", "timeout", None, 5.0, "httpx default")
_AIOHTTP = Spec("aiohttp", "timeout", None, 300.0, "aiohttp default total", "aiohttp")
_BOTO = Spec("boto3", "config", None, 60.0, "botocore default read_timeout, retried", "boto")
_SOCKET_DEFAULT = "http.client waits forever by default"
_MAILBOX_DEFAULT = "the socket default: waits forever"
_SMTP = Spec("smtplib", "timeout", 3, None, "smtplib waits forever by default")

SPECS: dict[str, Spec] = {
    **{f"requests.{v}": _REQUESTS for v in _VERBS},
    **{f"requests.Session.{v}": _REQUESTS for v in _VERBS},
    **{f"httpx.{v}": _HTTPX for v in (*_VERBS, "stream")},
    "httpx.Client": _HTTPX,
    "httpx.AsyncClient": _HTTPX,
    "urllib.request.urlopen": Spec("urllib", "timeout", 2, None, "urlopen waits forever"),
    "aiohttp.ClientSession": _AIOHTTP,
    "aiohttp.request": _AIOHTTP,
    "smtplib.SMTP": _SMTP,
    "smtplib.SMTP_SSL": Spec("smtplib", "timeout", None, None, "smtplib waits forever"),
    "smtplib.LMTP": _SMTP,
    # Mail-box clients connect in the constructor and wait on the socket's global default
    # (None unless socket.setdefaulttimeout is called): a silent server holds the task.
    "imaplib.IMAP4": Spec("imaplib", "timeout", 2, None, _MAILBOX_DEFAULT),
    "imaplib.IMAP4_SSL": Spec("imaplib", "timeout", None, None, _MAILBOX_DEFAULT),
    "poplib.POP3": Spec("poplib", "timeout", 2, None, _MAILBOX_DEFAULT),
    "poplib.POP3_SSL": Spec("poplib", "timeout", None, None, _MAILBOX_DEFAULT),
    "socket.create_connection": Spec("socket", "timeout", 1, None, "sockets block forever"),
    # The connection's timeout bounds its request()/getresponse(); without one it blocks
    # forever. HTTPSConnection's positional order changed across Python versions: keyword only.
    "http.client.HTTPConnection": Spec("http.client", "timeout", 2, None, _SOCKET_DEFAULT),
    "http.client.HTTPSConnection": Spec("http.client", "timeout", None, None, _SOCKET_DEFAULT),
    "boto3.client": _BOTO,
    "boto3.resource": _BOTO,
    "boto3.Session.client": _BOTO,
    "boto3.Session.resource": _BOTO,
}
# Constructors whose objects make calls with their own per-call timeout.
SESSIONS = {
    "requests.Session": "requests.Session",
    "requests.session": "requests.Session",
    "requests.sessions.Session": "requests.Session",
    "boto3.Session": "boto3.Session",
    "boto3.session.Session": "boto3.Session",
}
# Clients whose constructor timeout governs every call made through them.
CLIENTS = {"httpx.Client", "httpx.AsyncClient", "aiohttp.ClientSession"}


def suggest_timeout(limit: float | None) -> str:
    """A call timeout to suggest: half the job's limit, or 10 s when it has none."""
    if limit is None:
        return "10"
    return f"{max(1.0, round(limit / 2)):g}" if limit > 2 else f"{limit / 2:g}"


def find_client_calls(function: FunctionNode, module: Module) -> list[ClientCall]:
    """Network calls in a job and the same-module helpers it calls, each with its bound."""
    found: dict[int, ClientCall] = {}
    for fn in called_helpers(function, module):
        for call in client_calls_in(fn, module, "" if fn is function else fn.name):
            # A client's method without its own timeout is bounded by the constructor's:
            # one finding for the constructor, not one per call through it.
            found.setdefault(call.key, call)
    return list(found.values())


def client_calls_in(
    fn: FunctionNode,
    module: Module,
    via: str = "",
    held: dict[str, ast.Call] | None = None,
    unset: frozenset[str] = frozenset(),
) -> list[ClientCall]:
    """The network calls written in one function (not in what it calls), each with its bound.
    `held`: sessions the instance holds (`self.session`), from instance_bindings(); `unset`:
    parameters defaulting to None that the caller left out (`timeout=timeout` is then None)."""
    bindings = {**_bindings(module.tree.body, module, top_level=True), **(held or {})}
    bindings.update(_bindings([fn], module))
    out: list[ClientCall] = []
    for node in module.nodes(fn):
        if isinstance(node, ast.Call):
            call = _check(node, module, bindings, via, unset)
            if call is not None:
                out.append(call)
    return out


def handed_calls_in(fn: FunctionNode, module: Module, handed: dict[str, str]) -> list[ClientCall]:
    """Calls of a parameter the caller handed a client function: `request_func(url)` in a
    helper called as `helper(requests.post, ...)`."""
    out: list[ClientCall] = []
    for node in module.nodes(fn) if handed else []:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = handed.get(node.func.id)
            bound = _timeout(node, SPECS[name], module) if name is not None else None
            if name is None or bound is None:
                continue
            written = name
            out.append(ClientCall(
                key=id(node), library=SPECS[name].library, call=written,
                timeout=Value(f"{written} timeout", bound[0], "s", bound[1]),
                source=Source(module.rel, node.lineno)))  # fmt: skip
    return out


def instance_bindings(methods: list[tuple[FunctionNode, Module]]) -> dict[str, ast.Call]:
    """`self.session = requests.Session()` in any method of a class (and its bases): calls
    made later through `self.session` in another method are that session's."""
    out: dict[str, ast.Call] = {}
    for fn, module in methods:
        found = _bindings([fn], module)
        out.update({k: v for k, v in found.items() if k.startswith("self.")})
    return out


def _bindings(
    nodes: list[ast.stmt] | list[FunctionNode], module: Module, *, top_level: bool = False
) -> dict[str, ast.Call]:
    """Names bound to a session or client constructor: `s = requests.Session()`, `with
    httpx.Client() as c`. At module level only the module's own statements count."""
    out: dict[str, ast.Call] = {}
    for root in nodes:
        for node in [root] if top_level else module.nodes(root):
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs.append((node.targets[0], node.value))
            elif isinstance(node, ast.With | ast.AsyncWith):
                pairs.extend((i.optional_vars, i.context_expr) for i in node.items
                             if i.optional_vars is not None)  # fmt: skip
            for target, value in pairs:
                held = _receiver(target)
                if held is not None and isinstance(value, ast.Call):
                    name = module.qualify(value.func)
                    if name in SESSIONS or name in CLIENTS:
                        out[held] = value
    return out


def _check(
    node: ast.Call,
    module: Module,
    bindings: dict[str, ast.Call],
    via: str,
    unset: frozenset[str] = frozenset(),
) -> ClientCall | None:
    name = module.qualify(node.func)
    if name in CLIENTS:
        return None  # a client makes no call itself: its calls are checked where they happen
    spec = SPECS.get(name or "")
    target = node
    dynamic = _verb_by_name(node.func)
    if dynamic is not None and spec is None:
        # getattr(session, method)(url, ...): whichever verb, it is the session's request.
        made = ast.copy_location(ast.Call(dynamic, node.args, node.keywords), node)
        found = _check(made, module, bindings, via, unset)
        # The stand-in call is dropped after this: key the finding by the written call.
        return replace(found, key=id(node)) if found and found.key == id(made) else found
    if spec is None and isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        held = _receiver(receiver)
        bound = bindings.get(held) if held is not None else None
        if isinstance(receiver, ast.Call) and module.qualify(receiver.func) in CLIENTS:
            bound = receiver  # httpx.Client().get(...)
        if bound is None:
            return None
        kind = module.qualify(bound.func) or ""
        if kind in SESSIONS:
            name = f"{SESSIONS[kind]}.{node.func.attr}"
            spec = SPECS.get(name)
        elif kind in CLIENTS and node.func.attr in (*_VERBS, "stream"):
            spec = SPECS[kind]
            name = kind
            if keyword(node, spec.keyword) is None:
                target = bound  # no per-call timeout: the client's own governs
    if spec is None or name is None:
        return None
    bound_value = _timeout(target, spec, module, unset)
    if bound_value is None:
        return None
    amount, at = bound_value
    written = ast.unparse(node.func)
    return ClientCall(
        key=id(target),
        library=spec.library,
        call=written,
        timeout=Value(f"{written} timeout", amount, "s", at),
        source=Source(module.rel, node.lineno),
        via=via,
    )


def _verb_by_name(func: ast.expr) -> ast.Attribute | None:
    """`getattr(session, method)`, `getattr(requests, verb)` as a call's callee: the same
    object's `.request`, which every verb goes through with the same timeout argument."""
    if not (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and isinstance(func.args[0], ast.Name | ast.Attribute)
        and not isinstance(func.args[1], ast.Constant)
    ):
        return None
    return ast.copy_location(ast.Attribute(func.args[0], "request", ast.Load()), func)


def _receiver(expr: ast.expr) -> str | None:
    """The name a session is held under: `s`, or `self.session` on an instance."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return f"{expr.value.id}.{expr.attr}" if expr.value.id == "self" else None
    return None


def _timeout(
    call: ast.Call, spec: Spec, module: Module, unset: frozenset[str] = frozenset()
) -> tuple[float | None, Source] | None:
    """(seconds or None for unbounded, where that came from), or None when it cannot tell."""
    given = keyword(call, spec.keyword)
    expr: ast.expr | None = given.value if given is not None else None
    if expr is None and spec.position is not None and len(call.args) > spec.position:
        expr = call.args[spec.position]
    if expr is None:
        if any(k.arg is None for k in call.keywords):
            return None  # **options may carry it
        return spec.default, Source(note=spec.default_note)
    at = Source(module.rel, expr.lineno)
    if isinstance(expr, ast.Name) and expr.id in unset:
        return None, Source(note=f"{expr.id}=None: the caller passes none")
    if isinstance(expr, ast.Name) and expr.id in module.constants:
        expr = module.constants[expr.id]
    resolved = _resolve(expr, spec, module)
    return None if resolved is None else (resolved.value, at)


def _resolve(expr: ast.expr, spec: Spec, module: Module) -> Num | None:
    if isinstance(expr, ast.Tuple):
        parts = [number(e, module) for e in expr.elts]
        if any(p is None for p in parts):
            return None
        if any(p is not None and p.value is None for p in parts):
            return Num(None)
        return Num(max(p.value for p in parts if p is not None and p.value is not None))
    if isinstance(expr, ast.Call):
        return _resolve_object(expr, spec, module)
    return number(expr, module)


def _resolve_object(call: ast.Call, spec: Spec, module: Module) -> Num | None:
    """httpx.Timeout(10, connect=5), aiohttp.ClientTimeout(total=30), Config(read_timeout=5)."""
    name = (module.qualify(call.func) or "").rsplit(".", 1)[-1]
    if spec.style == "boto" and name == "Config":
        values = [_kw_number(call, k, module, 60.0) for k in ("connect_timeout", "read_timeout")]
    elif spec.style == "aiohttp" and name == "ClientTimeout":
        total = keyword(call, "total")
        if total is not None:
            return number(total.value, module)
        values = [_kw_number(call, k, module, None) for k in ("sock_read", "sock_connect")]
        if all(v == Num(None) for v in values):
            return Num(None)
    elif name == "Timeout":
        first = call.args[0] if call.args else getattr(keyword(call, "timeout"), "value", None)
        values = [number(first, module) if first is not None else None]
        values += [_kw_number(call, k, module, None) for k in ("connect", "read", "write", "pool")
                   if keyword(call, k) is not None]  # fmt: skip
    else:
        return None
    if any(v is None for v in values):
        return None
    if any(v is not None and v.value is None for v in values):
        return Num(None)
    return Num(max(v.value for v in values if v is not None and v.value is not None))


def _kw_number(call: ast.Call, name: str, module: Module, default: float | None) -> Num | None:
    given = keyword(call, name)
    return Num(default) if given is None else number(given.value, module)

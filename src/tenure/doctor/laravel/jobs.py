"""Queued classes (`implements ShouldQueue`, directly or through a parent), their retry and
timeout settings, the HTTP calls their handle() makes (read by http_calls.py), and
`Bus::batch` call sites."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from tenure.doctor.laravel.curl_class import imports_curl_class
from tenure.doctor.laravel.http_calls import HttpCall, http_builders, http_calls
from tenure.doctor.laravel.php import (
    EnvFiles,
    Evaluator,
    Resolved,
    call_args,
    line,
    name_of,
    string_value,
    text,
    walk,
)
from tenure.doctor.model import Source

QUEUED = {"ShouldQueue", "ShouldBeUnique", "ShouldBeUniqueUntilProcessing", "ShouldBeEncrypted"}
UNIQUE = {"ShouldBeUnique", "ShouldBeUniqueUntilProcessing"}
BATCH_CALLBACKS = {"then", "catch", "finally", "progress", "before"}
CLOSURES = frozenset({"anonymous_function", "arrow_function"})
SCOPES = frozenset({"class_declaration", "anonymous_class", "function_definition"})
CRASH_COUNTING = "CountCrashesAsExceptions"


@dataclass
class JobClass:
    name: str
    rel: str
    line: int
    parent: str | None
    interfaces: set[str]
    abstract: bool
    props: dict[str, Resolved] = field(default_factory=dict)  # $timeout, $tries, attributes
    methods: set[str] = field(default_factory=set)
    middleware_text: str = ""
    calls: list[HttpCall] = field(default_factory=list)
    uses_batches: bool = False
    fqn: str = ""
    # Calls handle() makes that the doctor does not follow (a dynamic method name, a client
    # resolved from the container or injected into handle()): said in the report.
    unfollowed: list[str] = field(
        default_factory=list
    )  # App\Jobs\SendInvoice: two classes may share a short name
    # What services.follow() needs to read a service class's methods after the whole scan.
    method_nodes: dict[str, Node] = field(default_factory=dict)
    evaluator: Evaluator | None = None
    guzzle: frozenset[str] = frozenset()  # the names the file writes Guzzle's Client as
    curl_class: bool = False  # the file imports php-curl-class's Curl\Curl
    builders: dict[str, list[Node]] = field(default_factory=dict)  # see http_builders()
    namespace: str = ""
    imports: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> Source:
        return Source(self.rel, self.line)


@dataclass
class BatchSite:
    source: Source
    captures_this: list[Source] = field(default_factory=list)


@dataclass
class CodeScan:
    classes: dict[str, JobClass] = field(default_factory=dict)  # every class, by full name
    batches: list[BatchSite] = field(default_factory=list)
    migrations_text: list[bytes] = field(default_factory=list)


PROPS = {
    "timeout",
    "tries",
    "maxExceptions",
    "backoff",
    "failOnTimeout",
    "uniqueFor",
    "connection",
    "queue",
    "retryUntil",
}
ATTRIBUTES = {
    "Timeout": "timeout",
    "Tries": "tries",
    "MaxExceptions": "maxExceptions",
    "Backoff": "backoff",
    "FailOnTimeout": "failOnTimeout",
    "UniqueFor": "uniqueFor",
    "Connection": "connection",
    "Queue": "queue",
}


NAMESPACE = re.compile(r"^\s*namespace\s+([\w\\]+)\s*[;{]", re.M)
USE = re.compile(r"^\s*use\s+\\?([\w\\]+)(?:\s+as\s+(\w+))?\s*;", re.M)


GROUP_USE = re.compile(r"^\s*use\s+\\?([\w\\]+?)\\?\{([^}]*)\}\s*;", re.M)
GROUP_ITEM = re.compile(r"([\w\\]+)(?:\s+as\s+(\w+))?")


def group_uses(source: str) -> dict[str, str]:
    """`use GuzzleHttp\\{Client as GuzzleHttp, Exception\\RequestException};`: each local
    name and the class it stands for."""
    out: dict[str, str] = {}
    for prefix, items in GROUP_USE.findall(source):
        for name, alias in GROUP_ITEM.findall(items):
            out[alias or name.rsplit("\\", 1)[-1]] = f"{prefix.rstrip(chr(92))}\\{name}"
    return out


def guzzle_names(source: str, imports: dict[str, str]) -> frozenset[str]:
    """The names `new X(...)` makes Guzzle's client under: an alias the file imports it as
    (`use GuzzleHttp\\Client as GuzzleHttp;`), and `Client` when the file names it at all."""
    aliases = {local for local, name in imports.items() if name == "GuzzleHttp\\Client"}
    return frozenset(aliases | ({"Client"} if "GuzzleHttp\\Client" in source else set()))


def scan_classes(root: Node, rel: str, env: EnvFiles, scan: CodeScan) -> None:
    source = text(root)
    found = NAMESPACE.search(source)
    namespace = found.group(1) if found else ""
    imports = {alias or name.rsplit("\\", 1)[-1]: name for name, alias in USE.findall(source)}
    imports.update(group_uses(source))
    guzzle = guzzle_names(source, imports)
    for declaration in walk(root, frozenset({"class_declaration"})):
        job = _class(declaration, rel, env, guzzle, imports_curl_class(source))
        if job is not None:
            job.fqn = f"{namespace}\\{job.name}" if namespace else job.name
            job.namespace, job.imports = namespace, imports
            job.parent = qualify(job.parent, namespace, imports)
            scan.classes.setdefault(job.fqn, job)
    for site in _batch_sites(root, rel):
        scan.batches.append(site)


def _class(
    node: Node, rel: str, env: EnvFiles, guzzle: frozenset[str], curl_class: bool
) -> JobClass | None:
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is None or body is None:
        return None
    parent = interfaces = None
    for child in node.named_children:
        if child.type == "base_clause" and child.named_children:
            parent = text(child.named_children[0])  # as written; made full by scan_classes
        elif child.type == "class_interface_clause":
            interfaces = {name_of(c) for c in child.named_children}
    abstract = any(c.type == "abstract_modifier" for c in node.children)
    job = JobClass(text(name), rel, line(node), parent, interfaces or set(), abstract)
    constants = {
        text(c.named_children[0]): c.named_children[-1]
        for c in walk(body, frozenset({"const_element"}))
        if len(c.named_children) >= 2
    }
    ev = Evaluator(env, rel, constants)
    for attribute in walk(node, frozenset({"attribute"}), into=frozenset({"declaration_list"})):
        key = ATTRIBUTES.get(name_of(attribute.named_children[0]))
        if key is not None:
            args = call_args(attribute)
            job.props[key] = (
                ev.eval(args[0]) if args else Resolved(True, Source(rel, line(attribute)))
            )
        if CRASH_COUNTING in text(attribute):
            job.middleware_text += CRASH_COUNTING
    methods: dict[str, Node] = {}
    for member in body.named_children:
        if member.type == "property_declaration":
            for element in member.named_children:
                if element.type != "property_element" or not element.named_children:
                    continue
                prop = text(element.named_children[0]).lstrip("$")
                if prop in PROPS and len(element.named_children) >= 2:
                    job.props[prop] = ev.eval(element.named_children[-1])
        elif member.type == "method_declaration":
            method_name = text(member.child_by_field_name("name"))
            methods[method_name] = member
        elif member.type == "use_declaration" and CRASH_COUNTING in text(member):
            job.middleware_text += CRASH_COUNTING
    job.methods = set(methods)
    job.method_nodes, job.evaluator, job.guzzle = methods, ev, guzzle
    job.curl_class = curl_class
    if "middleware" in methods:
        job.middleware_text += text(methods["middleware"])
    if "__construct" in methods:
        _constructor_settings(methods["__construct"], ev, job)
    if "queue" in methods:
        _queue_override(methods["queue"], ev, job)
    job.builders = http_builders(methods)
    for method in reachable(methods, "handle"):
        job.calls += http_calls(method, rel, ev, guzzle, job.builders, curl_class=curl_class)
    if "handle" in methods:
        job.unfollowed = _unfollowed(methods["handle"], reachable(methods, "handle"))
    return job


CONTAINER = ("app(", "resolve(", "App::make(", "Container::getInstance(", "$this->app->make(")
SCALARS = {"int", "string", "bool", "float", "array", "mixed", "callable", "iterable", "object"}


def _unfollowed(handle: Node, methods: list[Node]) -> list[str]:
    """`$this->{$method}()`, `app(Client::class)->send()`, and methods called on the objects
    Laravel injects into handle(): the doctor reads no HTTP call behind them."""
    injected = {}
    parameters = handle.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else []:
        kind = parameter.child_by_field_name("type")
        name = parameter.child_by_field_name("name")
        if kind is not None and name is not None and text(kind).lstrip("?\\") not in SCALARS:
            injected[text(name)] = text(kind).lstrip("?")
    out: list[str] = []
    for method in methods:
        for call in walk(method, frozenset({"member_call_expression"})):
            target = text(call.child_by_field_name("object"))
            called = call.child_by_field_name("name")
            shown = text(call).split("(")[0][:60] + "()"
            if target == "$this" and called is not None and called.type != "name":
                out.append(f"{shown} (a method chosen at run time)")
            elif target.startswith(CONTAINER):
                out.append(f"{shown} (resolved from the container)")
            elif target in injected:
                out.append(f"{shown} ({injected[target]} injected into handle())")
    return list(dict.fromkeys(out))[:5]


def _constructor_settings(method: Node, ev: Evaluator, job: JobClass) -> None:
    """`$this->onQueue('x')`, `$this->onConnection('y')`, `$this->timeout = 5` in __construct."""
    for call in walk(method, frozenset({"member_call_expression"})):
        called = text(call.child_by_field_name("name"))
        args = call_args(call)
        if called in ("onQueue", "onConnection") and args:
            job.props["queue" if called == "onQueue" else "connection"] = ev.eval(args[0])
    for assignment in walk(method, frozenset({"assignment_expression"})):
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is not None and right is not None and text(left).startswith("$this->"):
            prop = text(left).removeprefix("$this->")
            if prop in PROPS:
                job.props[prop] = ev.eval(right)


def _queue_override(method: Node, ev: Evaluator, job: JobClass) -> None:
    """`public function queue($queue, $command) { $queue->pushOn('deployer-low', $command); }`:
    the class (and every job extending it) is pushed on that queue."""
    for call in walk(method, frozenset({"member_call_expression"})):
        args = call_args(call)
        if text(call.child_by_field_name("name")) in ("pushOn", "laterOn") and args:
            job.props.setdefault("queue", ev.eval(args[0]))
            return


def reachable(methods: dict[str, Node], start: str) -> list[Node]:
    """handle() and the class's own methods it calls through $this->name(...). A call by a
    computed name (`$this->{$method}($data)`, an import dispatching on its sections) may reach
    any method of the class: all are taken."""
    seen: list[str] = []
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.append(name)
        for call in walk(methods[name], frozenset({"member_call_expression"})):
            if not _on_this(call.child_by_field_name("object")):
                continue
            called = call.child_by_field_name("name")
            if called is not None and called.type != "name":
                todo += [m for m in methods if m != "__construct"]
            else:
                todo.append(text(called))
    return [methods[n] for n in seen]


def _on_this(target: Node | None) -> bool:
    """`$this`, or a fluent chain on it (`$this->preFlightChecks()->importData()`: the class's
    own methods returning `$this`)."""
    while target is not None and target.type == "member_call_expression":
        target = target.child_by_field_name("object")
    return target is not None and text(target) == "$this"


def _batch_sites(root: Node, rel: str) -> list[BatchSite]:
    sites = []
    for scoped in walk(root, frozenset({"scoped_call_expression"})):
        if (
            name_of(scoped.child_by_field_name("scope")) != "Bus"
            or text(scoped.child_by_field_name("name")) != "batch"
        ):
            continue
        site = BatchSite(Source(rel, line(scoped)))
        node = scoped
        while node.parent is not None and node.parent.type == "member_call_expression":
            node = node.parent
            if text(node.child_by_field_name("name")) not in BATCH_CALLBACKS:
                continue
            for arg in call_args(node):
                if arg.type in CLOSURES and _uses_this(arg):
                    site.captures_this.append(Source(rel, line(arg)))
        sites.append(site)
    return sites


def _uses_this(closure: Node) -> bool:
    if closure.type == "anonymous_function" and any(
        c.type == "static_modifier" for c in closure.children
    ):
        return False
    return any(text(v) == "$this" for v in walk(closure, frozenset({"variable_name"}), into=SCOPES))


def resolve(scan: CodeScan) -> list[JobClass]:
    """Queued classes with the settings they inherit from their parents filled in."""
    jobs = []
    for job in scan.classes.values():
        chain = _ancestry(job, scan)
        if job.abstract or not (any(c.interfaces & QUEUED for c in chain) or _package_job(chain)):
            continue
        for ancestor in chain[1:]:
            for key, value in ancestor.props.items():
                job.props.setdefault(key, value)
            job.methods |= ancestor.methods
            job.interfaces |= ancestor.interfaces
            if CRASH_COUNTING in ancestor.middleware_text:
                job.middleware_text += CRASH_COUNTING
        jobs.append(job)
    return jobs


# Properties only a queue worker reads: a class that sets one is written to be queued.
WORKER_PROPS = {"timeout", "tries", "maxExceptions", "backoff", "failOnTimeout", "retryUntil"}


def _package_job(chain: list[JobClass]) -> bool:
    """A class extending a package's job (`class CrawlSiteJob extends
    \\Spatie\\SiteSearch\\Jobs\\CrawlSiteJob`, the parent in vendor/, which is not read) to
    set a worker's property on it: queued, as the package's job is."""
    top = chain[-1].parent  # set at the chain's end: a parent the project does not hold
    if not top:
        return False
    named_job = "\\Jobs\\" in "\\" + top or top.endswith("Job")
    return named_job and any(c.props.keys() & WORKER_PROPS for c in chain)


def qualify(name: str | None, namespace: str, imports: dict[str, str]) -> str | None:
    """A class name as written in a file, made full with its namespace and `use` imports."""
    if not name:
        return name
    if name.startswith("\\"):
        return name[1:]
    head, _, rest = name.partition("\\")
    if head in imports:
        return imports[head] + ("\\" + rest if rest else "")
    return f"{namespace}\\{name}" if namespace else name


def _ancestry(job: JobClass, scan: CodeScan) -> list[JobClass]:
    chain = [job]
    while chain[-1].parent and len(chain) < 10:
        parent = lookup(scan, chain[-1].parent)
        if parent is None or parent in chain:
            break
        chain.append(parent)
    return chain


def lookup(scan: CodeScan, fqn: str) -> JobClass | None:
    """By full name; else by short name when exactly one class has it (a parent in a file
    whose namespace the doctor could not read)."""
    if fqn in scan.classes:
        return scan.classes[fqn]
    short = fqn.rsplit("\\", 1)[-1]
    matches = [c for c in scan.classes.values() if c.name == short]
    return matches[0] if len(matches) == 1 else None


def prop_string(job: JobClass, key: str) -> str | None:
    value = job.props.get(key)
    if value is None or not value.known or value.value is None:
        return None
    return str(value.value)


__all__ = ["CodeScan", "HttpCall", "JobClass", "resolve", "scan_classes", "string_value"]

"""php-curl-class (`use Curl\\Curl; $curl = new Curl(); $curl->get($url)`): every request of a
handle is bounded by the handle's timeout, Curl::DEFAULT_TIMEOUT (30 s) unless the code calls
`->setTimeout(n)`, or none after `->disableTimeout()` (FACTS.md). Split from jobs.py, which
finds a job's calls; this module reads this one client."""

from __future__ import annotations

import re

from tree_sitter import Node

from tenure.doctor.laravel.php import line, text, walk
from tenure.doctor.laravel.streams import HttpCall
from tenure.doctor.model import Source, Value

DEFAULT_TIMEOUT_S = 30.0
VERBS = {"get", "post", "put", "patch", "delete", "head", "options", "download"}
IMPORT = re.compile(r"^\s*use\s+\\?Curl\\Curl\s*;", re.M)


def imports_curl_class(source: str) -> bool:
    return IMPORT.search(source) is not None


def curl_class_calls(method: Node, rel: str, imported: bool) -> list[HttpCall]:
    """The first request each `$x = new Curl()` of the method sends, with its timeout.
    `imported`: the file imports Curl\\Curl, so a bare `new Curl` is php-curl-class's."""
    body = text(method)
    out: list[HttpCall] = []
    for creation in walk(method, frozenset({"object_creation_expression"})):
        written = text(creation.named_children[0]) if creation.named_children else ""
        if not (written.lstrip("\\") == "Curl\\Curl" or (written == "Curl" and imported)):
            continue
        parent = creation.parent
        if parent is None or parent.type != "assignment_expression":
            continue
        held = text(parent.child_by_field_name("left"))
        for call in walk(method, frozenset({"member_call_expression"})):
            verb = text(call.child_by_field_name("name"))
            if text(call.child_by_field_name("object")) != held or verb not in VERBS:
                continue
            out.append(HttpCall(f"{held}->{verb}()", _timeout(held, body, rel, method),
                                Source(rel, line(call)), "php-curl-class"))  # fmt: skip
            break
    return out


def _timeout(held: str, body: str, rel: str, method: Node) -> Value:
    name = re.escape(held)
    if re.search(rf"{name}->disableTimeout\(", body):
        return Value("php-curl-class timeout", None, "s", Source(note="disableTimeout()"))
    found = re.search(rf"{name}->setTimeout\(\s*(\d+(?:\.\d+)?)\s*\)", body)
    if found:
        at = line(method) + body[: found.start()].count("\n")
        return Value("php-curl-class setTimeout()", float(found.group(1)), "s", Source(rel, at))
    note = f"php-curl-class Curl::DEFAULT_TIMEOUT {DEFAULT_TIMEOUT_S:g} s"
    return Value("php-curl-class timeout", DEFAULT_TIMEOUT_S, "s", Source(note=note))

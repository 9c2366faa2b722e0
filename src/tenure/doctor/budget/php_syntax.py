"""Small tree-sitter-php helpers for the budget readers: call chains, names, closures."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from tenure.doctor.laravel.php import call_args, name_of, text, walk

CALLS = frozenset({"member_call_expression", "nullsafe_member_call_expression",
                   "scoped_call_expression", "function_call_expression"})  # fmt: skip
CLOSURES = frozenset({"anonymous_function", "arrow_function"})
CLASSES = frozenset({"class_declaration", "anonymous_class", "trait_declaration"})
SCOPES = frozenset({"class_declaration", "method_declaration", "function_definition"})


def call_name(node: Node) -> str:
    """`save` for `$o->save()`, `dispatch` for `Job::dispatch()` and `dispatch(...)`."""
    if node.type == "function_call_expression":
        return name_of(node.child_by_field_name("function"))
    return text(node.child_by_field_name("name"))


def receiver(node: Node) -> Node | None:
    """What a call is made on: the object, the class scope; None for a plain function."""
    return node.child_by_field_name("object") or node.child_by_field_name("scope")


def chain(node: Node) -> list[Node]:
    """The calls and property reads of `A::where()->orderBy()->get()`, outermost first,
    ending with its root (a variable, a class name, `$this`)."""
    steps = [node]
    while True:
        inner = receiver(steps[-1]) if steps[-1].type in CALLS | {
            "member_access_expression", "nullsafe_member_access_expression"} else None  # fmt: skip
        if inner is None:
            return steps
        steps.append(inner)


def root_name(node: Node) -> str:
    """`$request` for `$request->all()`, `User` for `User::where()->get()`."""
    return text(chain(node)[-1])


def args(node: Node) -> list[Node]:
    return call_args(node)


def closure_params(closure: Node) -> list[str]:
    params = closure.child_by_field_name("parameters")
    if params is None:
        return []
    return [
        text(p.child_by_field_name("name"))
        for p in params.named_children
        if p.child_by_field_name("name") is not None
    ]


def closure_body(closure: Node) -> Node | None:
    return closure.child_by_field_name("body")


def own(node: Node, *, into_closures: bool = True) -> Iterator[Node]:
    """Every node under `node` (preorder), not entering nested classes or named functions,
    nor closures unless `into_closures`."""
    stack = list(reversed(node.named_children))
    while stack:
        current = stack.pop()
        yield current
        if current.type in SCOPES or (current.type in CLOSURES and not into_closures):
            continue
        stack.extend(reversed(current.named_children))


def short(node: Node, limit: int = 70) -> str:
    written = " ".join(text(node).split())
    return written if len(written) <= limit else written[: limit - 3] + "..."


def class_nodes(root: Node) -> list[Node]:
    """Classes and traits, found without entering any function body."""
    return list(walk(root, CLASSES, into=CLASSES | frozenset({"compound_statement"})))


def methods_of(cls: Node) -> list[Node]:
    body = cls.child_by_field_name("body")
    children = body.named_children if body is not None else []
    return [m for m in children if m.type == "method_declaration"]

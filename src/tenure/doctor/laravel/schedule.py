"""Workers the scheduler starts: `$schedule->command('queue:work', $params)` in a console
kernel, with the options as an array literal, a variable assigned one, or a config() key that
holds one (FreeScout keeps `'--timeout' => '1800'` in config/app.php `queue_work_params`).
Such a worker's clocks live in PHP, where no deployment reader looks."""

from __future__ import annotations

import os

from tree_sitter import Node

from tenure.doctor.laravel.config import find_config
from tenure.doctor.laravel.deploy import ArtisanWorker
from tenure.doctor.laravel.php import (
    array_get,
    array_items,
    call_args,
    line,
    parse,
    returned_array,
    string_value,
    text,
    walk,
)
from tenure.doctor.model import Source

WORKER_COMMANDS = ("queue:work", "queue:listen")
CALLS = frozenset({"member_call_expression", "scoped_call_expression"})  # $schedule->, Schedule::
ASSIGNMENTS = frozenset({"assignment_expression"})


def scheduled_workers(root: str, base: str, rel: str, tree: Node) -> list[ArtisanWorker]:
    out: list[ArtisanWorker] = []
    for call in walk(tree, CALLS):
        if text(call.child_by_field_name("name")) != "command":
            continue
        args = call_args(call)
        command = string_value(args[0]) if args else None
        if command not in WORKER_COMMANDS:
            continue
        found = _options(root, base, rel, tree, args[1]) if len(args) > 1 else None
        if found is None:
            continue
        options, at = found
        out.append(ArtisanWorker("schedule", f"scheduled {command}", at, command, None, options))
    return _unique(out)


def _unique(workers: list[ArtisanWorker]) -> list[ArtisanWorker]:
    """One worker per options array: a kernel often names the same command twice (to run it
    and to find its mutex)."""
    seen: dict[Source, ArtisanWorker] = {}
    for worker in workers:
        seen.setdefault(worker.source, worker)
    return list(seen.values())


def _options(
    root: str, base: str, rel: str, tree: Node, node: Node
) -> tuple[dict[str, str], Source] | None:
    if node.type == "variable_name":
        node = _assigned(tree, text(node)) or node
    if node.type == "array_creation_expression":
        return _read(node), Source(rel, line(node))
    if node.type == "function_call_expression":
        return _config_array(root, base, node)
    return None


def _assigned(tree: Node, variable: str) -> Node | None:
    for assignment in walk(tree, ASSIGNMENTS):
        left = assignment.child_by_field_name("left")
        if left is not None and left.type == "variable_name" and text(left) == variable:
            return assignment.child_by_field_name("right")
    return None


def _config_array(root: str, base: str, call: Node) -> tuple[dict[str, str], Source] | None:
    """config('app.queue_work_params') -> the array under that key in config/app.php."""
    if text(call.child_by_field_name("function")).lower() != "config":
        return None
    args = call_args(call)
    key = string_value(args[0]) if args else None
    if not key or "." not in key:
        return None
    name, _, path = key.partition(".")
    config_file = find_config(root, f"{name}.php")
    if config_file is None:
        return None
    try:
        with open(config_file, "rb") as handle:
            array = returned_array(parse(handle.read(2 * 1024 * 1024)))
    except OSError:
        return None
    for part in path.split("."):
        array = array_get(array, part)
    if array is None or array.type != "array_creation_expression":
        return None
    return _read(array), Source(os.path.relpath(config_file, base), line(array))


def _read(array: Node) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, value, _ in array_items(array):
        if key and key.startswith("--"):
            literal = string_value(value)
            options[key[2:]] = literal if literal is not None else text(value)
    return options

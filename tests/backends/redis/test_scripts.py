"""The Redis store's Lua lives in .lua files shipped with the package, and every script compiles."""

from __future__ import annotations

import ast
from pathlib import Path

import redis

import tenure.stores
from tenure.stores.redis.scripts import QUEUE_LIBS, global_scripts, queue_scripts, read_lua

STORES = Path(tenure.stores.__file__).parent


def test_every_script_compiles_on_the_server(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        scripts = {**queue_scripts(), **global_scripts()}
        # SCRIPT LOAD compiles without running: a syntax error in any file fails here, by name.
        for name, text in scripts.items():
            assert len(client.script_load(text)) == 40, name
    finally:
        client.close()
    assert {"enqueue", "reserve", "complete", "complete_and_reserve", "end_apply"} <= set(scripts)
    assert {"register_worker", "register_batch"} <= set(scripts)


def test_includes_are_expanded() -> None:
    text = read_lua("queue/enqueue.lua")
    assert "--#include" not in text
    assert read_lua("lib/enqueue.lua") in text


def test_no_python_module_of_the_stores_carries_lua_in_a_string() -> None:
    offenders = []
    for path in sorted(STORES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and "redis.call(" in text:
                offenders.append(f"{path.relative_to(STORES)}:{node.lineno}")
    assert offenders == []


def test_a_script_carries_only_the_prelude_functions_it_reaches() -> None:
    scripts = queue_scripts()
    # Reading a job's end touches no batch callback; ending one may hand a chain on.
    assert "local function b_enqueue_callback" not in scripts["end_read"]
    assert "local function chain_link_end" in scripts["end_apply"]
    # A hook set by a later library rides along with the function it replaces.
    assert "\non_member_cancelled = function" in scripts["cancel_batch"]
    for text in scripts.values():
        assert "local function with_lost_callbacks" in text  # every queue script is wrapped
    # The hot path's enqueue leaves most of the libraries out.
    libraries = sum(len(read_lua(lib)) for lib in QUEUE_LIBS)
    assert len(scripts["enqueue"]) < libraries / 2

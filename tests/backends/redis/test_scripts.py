"""The Redis store's Lua lives in .lua files shipped with the package, and every script compiles."""

from __future__ import annotations

import ast
from pathlib import Path

import redis

import tenure.stores
from tenure.stores.redis.scripts import global_scripts, queue_scripts, read_lua

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
    text = read_lua("queue/complete_and_reserve.lua")
    assert "--#include" not in text
    assert read_lua("queue/complete.lua") in text and read_lua("queue/reserve.lua") in text


def test_no_python_module_of_the_stores_carries_lua_in_a_string() -> None:
    offenders = []
    for path in sorted(STORES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and "redis.call(" in text:
                offenders.append(f"{path.relative_to(STORES)}:{node.lineno}")
    assert offenders == []

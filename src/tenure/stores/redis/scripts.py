"""The Redis store's Lua, read from the `lua/` files shipped with the package.

Each script is sent as one text: the constants below (so Python and Lua share one source for
them), then its kind's preludes less the functions it never reaches (Lua builds every top-level
closure again on each call), then its own body. redis-py's `Script` runs it with
EVALSHA and loads it (SCRIPT LOAD) only when the server answers NOSCRIPT, so the text crosses
the wire once per server, not once per call.

On Redis 7 the same bodies run as functions instead (functions.py): one library per kind
(queue_library, global_library) whose preludes are built once, at FUNCTION LOAD, named by the
hash of its text so that two tenure versions on one server keep their own copies. The EVALSHA
texts stay for Redis 6.2 and for servers that refuse FUNCTION.
"""

from __future__ import annotations

import functools
import hashlib
import re
from importlib import resources

# Kept small: a burst of 10,000 jobs must not leave 10,000 wake-ups behind for idle workers to
# chew through one by one; 32 is enough to wake every idle worker of a typical deployment.
NOTIFY_MAX = 32
# A job's fields in enqueue.lua's ARGV group, in the order sent: those every job has first, so
# that a group stops at its last field that differs from its default (database.enqueue_args).
ENQUEUE_ORDER: tuple[str, ...] = ("id", "name", "payload", "policy", "delay", "keep_s", "keep_f")
ENQUEUE_ORDER += ("priority", "batch_id", "chain", "unique_key", "unique_until", "unique_for")
ENQUEUE_ORDER += ("overlap_key", "overlap_delay", "rate_key", "rate_limit", "rate_window")
ENQUEUE_ORDER += ("concurrency_key", "concurrency_limit", "debounce_key", "fair_key", "fair_weight")
# What the script assumes of a field not sent ('-': none, an optional's absence).
ENQUEUE_DEFAULTS: tuple[str, ...] = ("", "", "", "", "0.0", "-", "-", "0", "-", "-", "-", "")
ENQUEUE_DEFAULTS += ("-", "-", "0.0", "-", "0", "0.0", "-", "0", "-", "-", "1.0")
# A plain job's fields in enqueue_plain.lua's ARGV: id, name, payload, policy, delay, keep_s,
# keep_f, priority (database.plain_args).
PLAIN_FIELDS = 8
# Ready jobs a reservation looks at beyond `limit`: guarded jobs in front may be deferred.
RESERVE_LOOKAHEAD = 32
# Fields per batch member in ARGV: base, queue, id, name, payload, policy, delay, guards.
MEMBER_FIELDS = 8
# How long a job's end token waits for its waiter (JobHandle.wait) to pop it.
ENDED_TOKEN_TTL_S = 60
CALLBACK_KINDS = ("then", "catch", "finally")
CALLBACK_FIELDS = ("id", "base", "queue", "name", "payload", "policy", "delay", "keep", "guards")

# A queue script's reply that also names callbacks a damaged batch record lost:
# [LOST_CALLBACKS_MARK, [[batch id, kind], ...], the script's own reply] (lib/batch_io.lua).
LOST_CALLBACKS_MARK = "tenure:lost-callbacks"

CONSTANTS = (
    "local NOTIFY_MAX, RESERVE_LOOKAHEAD, MEMBER_FIELDS, CALLBACK_FIELDS,"
    f" ENDED_TOKEN_TTL_S, PLAIN_FIELDS = {NOTIFY_MAX}, {RESERVE_LOOKAHEAD}, {MEMBER_FIELDS},"
    f" {len(CALLBACK_FIELDS)}, {ENDED_TOKEN_TTL_S}, {PLAIN_FIELDS}\n"
    f"local LOST_CALLBACKS_MARK = '{LOST_CALLBACKS_MARK}'\n"
)
# Tables only lib/enqueue.lua reads: a library builds them once, but an EVALSHA script on every
# call, so only the scripts that read them get them there (_scripts).
ENQUEUE_CONSTANTS = (
    "local ENQ = {" + ", ".join(f"{name} = {k}" for k, name in enumerate(ENQUEUE_ORDER, 1)) + "}\n"
    f"local ENQUEUE_DEFAULTS = {{{', '.join(repr(value) for value in ENQUEUE_DEFAULTS)}}}\n"
)
ENQUEUE_WORDS = re.compile(r"\b(?:ENQ|ENQUEUE_DEFAULTS)\b")
# Scripts on one queue's keys see the queue prelude; store-wide ones ({g} tag) a small one.
QUEUE_LIBS = (
    "lib/prelude.lua",
    "lib/batch_rules.lua",
    "lib/batch_io.lua",
    "lib/chain_io.lua",
    "lib/guards.lua",
    "lib/hot_path.lua",
)
GLOBAL_LIBS = ("lib/global_prelude.lua",)
INCLUDE = re.compile(r"^--#include (\S+)$", re.MULTILINE)
# A top-level statement of a library starts at column 0 with `local` or an assignment; lines
# inside a function are indented, and its closing `end` is not an assignment.
STATEMENT = re.compile(r"^(?=local\b|[A-Za-z_]\w*\s*=)", re.MULTILINE)
# A statement that only makes a function: `local function f(`, `local f = function(`, or a hook
# set on an earlier library's function, `f = function(` (chain_io.lua's on_member_cancelled).
FUNCTION = re.compile(
    r"^(?:local function ([A-Za-z_]\w*)|(?:local )?([A-Za-z_]\w*)\s*=\s*function\b)"
)
WORD = re.compile(r"[A-Za-z_]\w*")


def _used(body: str, prelude: str) -> str:
    """The prelude without the functions `body` never reaches. Lua builds every top-level
    closure again on each EVALSHA call, so leaving the unreached ones out is work saved per call.
    Statements that are not function definitions all stay; a name in a comment only keeps a
    function in, never drops one."""
    head, *statements = STATEMENT.split(prelude)
    functions: dict[int, str] = {}
    for i, text in enumerate(statements):
        m = FUNCTION.match(text)
        if m:
            functions[i] = m.group(1) or m.group(2)
    keep = {i for i in range(len(statements)) if i not in functions}
    words = set(WORD.findall(body + head + "".join(statements[i] for i in keep)))
    changed = True
    while changed:
        changed = False
        for i, name in functions.items():
            if i not in keep and name in words:
                keep.add(i)
                words |= set(WORD.findall(statements[i]))
                changed = True
    return head + "".join(text for i, text in enumerate(statements) if i in keep)


def read_lua(relative: str) -> str:
    """One file under lua/, with its `--#include PATH` lines replaced by those files."""
    text = resources.files("tenure.stores.redis").joinpath("lua", relative).read_text("utf-8")
    return INCLUDE.sub(lambda m: read_lua(m.group(1)), text)


def _bodies(kind: str, *, wrap: bool = False) -> dict[str, str]:
    folder = resources.files("tenure.stores.redis").joinpath("lua", kind)
    names = sorted(f.name[: -len(".lua")] for f in folder.iterdir() if f.name.endswith(".lua"))
    bodies = {name: read_lua(f"{kind}/{name}.lua") for name in names}
    if wrap:  # the body's reply, and what it could not enqueue, go back together
        bodies = {name: _wrapped(text) for name, text in bodies.items()}
    return bodies


def _wrapped(text: str) -> str:
    return f"local function body()\n{text}\nend\nreturn with_lost_callbacks(body())\n"


def _scripts(kind: str, libs: tuple[str, ...], *, wrap: bool = False) -> dict[str, str]:
    prelude = "".join(read_lua(lib) for lib in libs)
    bodies = _bodies(kind, wrap=wrap)
    out = {}
    for name, text in bodies.items():
        used = _used(text, prelude)
        enqueues = ENQUEUE_WORDS.search(used + text) is not None
        out[name] = CONSTANTS + (ENQUEUE_CONSTANTS if enqueues else "") + used + text
    return out


@functools.cache
def queue_scripts() -> dict[str, str]:
    """Name -> full text of every script that works on one queue's keys."""
    return _scripts("queue", QUEUE_LIBS, wrap=True)


@functools.cache
def global_scripts() -> dict[str, str]:
    """Name -> full text of every script on the store-wide keys."""
    return _scripts("global", GLOBAL_LIBS)


@functools.cache
def queue_library() -> tuple[str, dict[str, str]]:
    """The queue scripts as one Redis 7 library: its text, and script name -> function name."""
    return _library("queue", QUEUE_LIBS, _bodies("queue"), wrap=True)


@functools.cache
def global_library() -> tuple[str, dict[str, str]]:
    """The store-wide scripts as one Redis 7 library (see queue_library)."""
    return _library("global", GLOBAL_LIBS, _bodies("global"))


# -- Redis 7 functions ------------------------------------------------------------------------
# The same scripts as one FUNCTION LOAD library per kind: the preludes' functions are built once,
# when the library loads, instead of on every EVALSHA call (issue 32: that was 7-13 µs of the
# server's CPU per drained job). So are the preludes' constants (a value made of literals only,
# never written to by a script). Their other top-level statements (the keys of this call, the
# memoised clock, an accumulator) run again at the start of every call, in `setup`. The library
# and its functions are named by the text's hash, so two tenure versions on one server never
# replace each other's code.
DECLARED = re.compile(r"^local\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(=)?")
# What a constant's value may hold besides literals: these words, and names built once before it.
LITERAL_WORDS = frozenset({"true", "false", "nil", "and", "or", "not"})
# Dropped before a value's words are read: comments, strings, numbers, a constructor's field names.
NOT_A_NAME = re.compile(r"--[^\n]*|'[^'\n]*'|\"[^\"\n]*\"|\b\d[\w.]*|\b[A-Za-z_]\w*\s*=(?!=)")
EMPTY_TABLE = re.compile(r"\s*\{\s*\}\s*")
# `local NAME = {} --#library`: a table the library builds once and keeps across calls (a cache
# of what every call would make again: prelude.lua's KEY_NAMES); an EVALSHA script makes it
# afresh on every call, which a cache allows.
LIBRARY_TABLE = re.compile(r"\s*\{\s*\}\s*--#library\b")


def _constant(value: str, constants: set[str]) -> bool:
    """Whether a top-level value is built of literals (and earlier constants) only. An empty table
    is not: a script fills it (LOST_CALLBACKS), so each call needs its own."""
    code = NOT_A_NAME.sub(" ", value)
    if EMPTY_TABLE.fullmatch(code):
        return False
    return all(w in LITERAL_WORDS or w in constants for w in WORD.findall(code))


def _written(name: str, lua: str) -> bool:
    """Whether any of `lua` writes into the table `name` (so it cannot be shared across calls)."""
    into = rf"\b{name}\s*(?:\[[^\]]*\]|\.\w+)\s*=(?!=)|table\.(?:insert|remove|sort)\(\s*{name}\b"
    return re.search(into, lua) is not None


def _split_prelude(
    prelude: str, lua: str = ""
) -> tuple[list[str], list[str], list[str], list[str]]:
    """(names the top-level statements declare, the constants' assignments, the per-call
    statements as assignments, functions). `lua`: every text that may write a constant table."""
    _head, *statements = STATEMENT.split(prelude)
    names: list[str] = []
    constants: set[str] = set()
    once: list[str] = []
    per_call: list[str] = []
    functions: list[str] = []
    for text in statements:
        if FUNCTION.match(text):
            functions.append(text)
            continue
        m = DECLARED.match(text)
        if m is None:  # an assignment to a name declared earlier: it runs per call as it is
            per_call.append(text)
            continue
        declared = [n.strip() for n in m.group(1).split(",")]
        names += declared
        rest = text[m.end() :]
        if m.group(2) and LIBRARY_TABLE.match(rest):  # a cache kept across calls
            once.append(f"{', '.join(declared)} ={rest}")
        elif (
            m.group(2)
            and _constant(rest, constants)
            and not any(_written(n, prelude + lua) for n in declared)
        ):
            constants.update(declared)
            once.append(f"{', '.join(declared)} ={rest}")
        elif m.group(2):
            per_call.append(f"{', '.join(declared)} ={rest}")
        else:  # `local a, b`: reset to nil on every call, as a fresh script would have them
            per_call.append(f"{', '.join(declared)} = {', '.join('nil' for _ in declared)}{rest}")
    return names, once, per_call, functions


def _library(
    kind: str, libs: tuple[str, ...], bodies: dict[str, str], *, wrap: bool = False
) -> tuple[str, dict[str, str]]:
    """The library's text and, per script name, the name of its function. `wrap`: each body's
    reply goes back through with_lost_callbacks (as _bodies' wrap)."""
    prelude = "".join(read_lua(lib) for lib in libs)
    names, once, per_call, functions = _split_prelude(prelude, "".join(bodies.values()))
    # the constants too: two versions differing only in one must not share a name
    named = CONSTANTS + ENQUEUE_CONSTANTS + prelude + repr(sorted(bodies.items())) + repr(wrap)
    digest = hashlib.sha1(named.encode()).hexdigest()
    tag = f"tenure_{kind}_{digest[:16]}"
    head = [f"#!lua name={tag}", "local KEYS, ARGV", CONSTANTS, ENQUEUE_CONSTANTS]
    if names:
        head.append(f"local {', '.join(names)}")
    setup = ["local function setup(keys, args)", "KEYS, ARGV = keys, args", *per_call, "end"]
    registered, calls = [], {}
    for name, text in bodies.items():
        calls[name] = f"{tag}_{name}"
        if wrap:
            # the body made once, at load, in a block of its own (a main chunk holds at most
            # 200 locals): not a closure made again on every call (issue 32). It reads the
            # call's KEYS, ARGV and prelude values through the upvalues setup() assigns.
            registered.append(
                f"do\nlocal function body()\n{text}\nend\n"
                f"redis.register_function('{calls[name]}', function(keys, args)\n"
                "setup(keys, args)\nreturn with_lost_callbacks(body())\nend)\nend"
            )
            continue
        registered.append(
            f"redis.register_function('{calls[name]}', function(keys, args)\n"
            f"setup(keys, args)\n{text}\nend)"
        )
    return "\n".join([*head, *once, *functions, *setup, *registered]) + "\n", calls

"""config/queue.php, config/horizon.php and config/cache.php, each value with its source.

Laravel 11+ applications may have no config/queue.php at all: the framework's own file then
applies, and it is modelled here with the same env() keys it reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tree_sitter import Node

from tenure.doctor.laravel.php import (
    EnvFiles,
    Evaluator,
    Resolved,
    array_get,
    array_items,
    as_number,
    line,
    parse,
    returned_array,
    string_value,
    text,
    walk,
)
from tenure.doctor.model import Skipped, Source, Value

# Where applications keep their config: config/ (the skeleton), app/Config (BookStack and others).
CONFIG_DIRS = ("config", os.path.join("app", "Config"))
FRAMEWORK = "Laravel framework default config (no {name} in the project)"
# The framework's config/queue.php (11.x+): connection -> (driver, env key for retry_after).
FRAMEWORK_CONNECTIONS = {
    "sync": ("sync", None),
    "database": ("database", "DB_QUEUE_RETRY_AFTER"),
    "beanstalkd": ("beanstalkd", "BEANSTALKD_QUEUE_RETRY_AFTER"),
    "sqs": ("sqs", None),
    "redis": ("redis", "REDIS_QUEUE_RETRY_AFTER"),
}
RETRY_AFTER_DEFAULT_S = 90.0
RETRY_AFTER_ABSENT_S = 60.0  # the queue classes' own fallback when the key is missing
# mongodb (mongodb/laravel-mongodb's MongoQueue) leases like the database driver; its
# connector reads the lease from 'expire', with the same 60 s fallback (FACTS.md).
LEASED_DRIVERS = {"database", "redis", "beanstalkd", "mongodb"}
HORIZON_TIMEOUT_DEFAULT_S = 60.0
LOCAL_ENVS = {"local", "testing", "development", "dev"}


@dataclass
class Connection:
    name: str
    driver: str | None
    retry_after: Value | None  # None: the driver has no retry_after (sqs, sync) or unknown
    queue: str
    source: Source
    unresolved: str = ""  # why retry_after is unknown


@dataclass
class Supervisor:
    environment: str
    name: str
    connection: str
    queues: tuple[str, ...]
    timeout: Value | None
    tries: Resolved | None
    source: Source


@dataclass
class Config:
    default: Resolved
    default_key: str | None  # the env key config/queue.php reads for the default connection
    connections: dict[str, Connection] = field(default_factory=dict)
    queue_source: Source = field(default_factory=Source)
    batch_table: str = "job_batches"
    batch_driver: str = "database"
    supervisors: list[Supervisor] = field(default_factory=list)
    horizon: bool = False
    cache_driver: Resolved | None = None
    skipped: list[Skipped] = field(default_factory=list)


def find_config(root: str, name: str) -> str | None:
    for folder in CONFIG_DIRS:
        path = os.path.join(root, folder, name)
        if os.path.isfile(path):
            return path
    return None


def read_config(root: str, base: str, env: EnvFiles) -> Config:
    config = _read_queue(root, base, env)
    _read_horizon(root, base, env, config)
    _read_cache(root, base, env, config)
    return config


def _load(path: str, base: str, config: Config) -> tuple[Node, str] | None:
    rel = os.path.relpath(path, base)
    try:
        with open(path, "rb") as handle:
            root = parse(handle.read(2 * 1024 * 1024))
    except OSError as exc:
        config.skipped.append(Skipped(rel, f"cannot read: {exc.strerror}"))
        return None
    array = returned_array(root)
    if array is None:
        config.skipped.append(Skipped(rel, "does not return an array literal"))
        return None
    return array, rel


def _read_queue(root: str, base: str, env: EnvFiles) -> Config:
    path = find_config(root, "queue.php")
    loaded = _load(path, base, Config(Resolved(None, Source()), None)) if path else None
    if loaded is None:
        return _framework_queue(env)
    array, rel = loaded
    ev = Evaluator(env, rel)
    default_node = array_get(array, "default")
    # Laravel 11+ merges the framework's config/queue.php under the project's: a file without
    # 'default' (or without a connection a worker names) has the framework's.
    framework = _framework_queue(env)
    if default_node is None:
        config = Config(framework.default, "QUEUE_CONNECTION", queue_source=Source(rel, 1))
    else:
        default = ev.eval(default_node)
        config = Config(default, _env_key(default_node), queue_source=Source(rel, 1))
    connections = array_get(array, "connections")
    for name, node, at in array_items(connections) if connections is not None else []:
        if name is None or node.type != "array_creation_expression":
            continue
        driver_node = array_get(node, "driver")
        driver = ev.eval(driver_node).value if driver_node is not None else None
        queue_node = array_get(node, "queue")
        queue = ev.eval(queue_node).value if queue_node is not None else "default"
        connection = Connection(
            name,
            str(driver) if driver is not None else None,
            None,
            str(queue or "default"),
            Source(rel, at),
        )
        retry = array_get(node, "retry_after")
        if retry is None and connection.driver == "mongodb":
            retry = array_get(node, "expire")
        if connection.driver in LEASED_DRIVERS:
            if retry is None:
                connection.retry_after = Value(
                    f"{name} retry_after",
                    RETRY_AFTER_ABSENT_S,
                    "s",
                    Source(rel, at, "retry_after absent: the queue's fallback of 60 s applies"),
                )
            else:
                resolved = ev.eval(retry)
                amount = as_number(resolved.value)
                if resolved.known and amount is not None:
                    connection.retry_after = Value(
                        f"{name} retry_after", amount, "s", _explain(resolved, rel, line(retry))
                    )
                else:
                    connection.unresolved = resolved.source.note or text(retry)
        config.connections[name] = connection
    for name, connection in framework.connections.items():
        config.connections.setdefault(name, connection)
    batching = array_get(array, "batching")
    if batching is not None:
        table = string_value(array_get(batching, "table"))
        driver_value = ev.eval(array_get(batching, "driver") or batching).value
        config.batch_table = table or config.batch_table
        if isinstance(driver_value, str) and array_get(batching, "driver") is not None:
            config.batch_driver = driver_value
    return config


def _explain(resolved: Resolved, rel: str, at: int) -> Source:
    """The config line, plus the .env line it read from when there is one."""
    source = resolved.source
    if source.path == rel or source.path is None:
        return Source(rel, at, source.note)
    return Source(source.path, source.line, f"{source.note}, read by {rel}:{at}")


def _env_key(node: Node | None) -> str | None:
    if node is None:
        return None
    for call in (
        walk(node, frozenset({"function_call_expression"}))
        if node.type != ("function_call_expression")
        else [node]
    ):
        if text(call.child_by_field_name("function")) == "env":
            args = call.child_by_field_name("arguments")
            first = (
                args.named_children[0].named_children[0] if args and args.named_children else None
            )
            return string_value(first)
    return None


def _framework_queue(env: EnvFiles) -> Config:
    note = FRAMEWORK.format(name="config/queue.php")
    entry = env.get("QUEUE_CONNECTION")
    default = (
        Resolved(entry.value, entry.source)
        if entry is not None
        else Resolved("database", Source(note=note))
    )
    config = Config(default, "QUEUE_CONNECTION", queue_source=Source(note=note))
    for name, (driver, key) in FRAMEWORK_CONNECTIONS.items():
        retry_after = None
        if key is not None:
            set_in = env.get(key)
            amount = as_number(set_in.value) if set_in else None
            retry_after = (
                Value(f"{name} retry_after", amount, "s", set_in.source)
                if set_in is not None and amount is not None
                else Value(f"{name} retry_after", RETRY_AFTER_DEFAULT_S, "s", Source(note=note))
            )
        config.connections[name] = Connection(
            name, driver, retry_after, "default", Source(note=note)
        )
    return config


def _read_horizon(root: str, base: str, env: EnvFiles, config: Config) -> None:
    path = find_config(root, "horizon.php")
    loaded = _load(path, base, config) if path else None
    if loaded is None:
        return
    config.horizon = True
    array, rel = loaded
    ev = Evaluator(env, rel)
    defaults = (
        {k: v for k, v, _ in array_items(array_get(array, "defaults") or array) if k}
        if (array_get(array, "defaults") is not None)
        else {}
    )
    environments = array_get(array, "environments")
    for env_name, supervisors, _ in array_items(environments) if environments is not None else []:
        if env_name is None or supervisors.type != "array_creation_expression":
            continue
        if env_name.lower() in LOCAL_ENVS:
            continue  # not the running configuration
        for name, options, at in array_items(supervisors):
            if name is None or options.type != "array_creation_expression":
                continue
            config.supervisors.append(
                _supervisor(ev, rel, env_name, name, options, at, defaults.get(name))
            )


def _supervisor(
    ev: Evaluator, rel: str, env_name: str, name: str, options: Node, at: int, fallback: Node | None
) -> Supervisor:
    def option(key: str) -> Node | None:
        found = array_get(options, key)
        return found if found is not None else array_get(fallback, key)

    connection_node = option("connection")
    connection = ev.eval(connection_node).value if connection_node is not None else "redis"
    queue_node = option("queue")
    queues: tuple[str, ...] = ("default",)
    if queue_node is not None and queue_node.type == "array_creation_expression":
        queues = tuple(str(ev.eval(v).value) for _, v, _ in array_items(queue_node))
    elif queue_node is not None:
        queues = tuple(q.strip() for q in str(ev.eval(queue_node).value or "default").split(","))
    timeout_node = option("timeout")
    label = f"Horizon {env_name}.{name} timeout"
    timeout: Value | None
    if timeout_node is None:
        timeout = Value(label, HORIZON_TIMEOUT_DEFAULT_S, "s", Source(rel, at, "Horizon default"))
    else:
        resolved = ev.eval(timeout_node)
        amount = as_number(resolved.value)
        timeout = (
            Value(
                label,
                None if amount == 0 else amount,
                "s",
                _explain(resolved, rel, line(timeout_node)),
            )
            if resolved.known and amount is not None
            else None
        )
    tries_node = option("tries")
    tries = ev.eval(tries_node) if tries_node is not None else None
    return Supervisor(env_name, name, str(connection), queues, timeout, tries, Source(rel, at))


def _read_cache(root: str, base: str, env: EnvFiles, config: Config) -> None:
    path = find_config(root, "cache.php")
    loaded = _load(path, base, config) if path else None
    if loaded is None:
        entry = env.get("CACHE_STORE") or env.get("CACHE_DRIVER")
        if entry is not None:
            config.cache_driver = Resolved(entry.value, entry.source)
        return
    array, rel = loaded
    ev = Evaluator(env, rel)
    default_node = array_get(array, "default")
    if default_node is None:
        return
    store = ev.eval(default_node)
    if not store.known or not isinstance(store.value, str):
        return
    stores = array_get(array, "stores")
    driver_node = array_get(array_get(stores, store.value), "driver")
    if driver_node is None:
        config.cache_driver = store
        return
    driver = ev.eval(driver_node)
    config.cache_driver = Resolved(driver.value, store.source, driver.known)

"""Docker Compose: `stop_grace_period` (default 10 s, then SIGKILL), `stop_signal`, memory
limits, and the worker's `entrypoint` + `command`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tenure.doctor.model import Setting, Skipped, Source, Value
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.units import go_duration, memory_mb, signal_name
from tenure.doctor.readers.worker_command import (
    find_worker,
    interpolate,
    make_launch,
    split_command,
)
from tenure.doctor.readers.yamlnodes import YMap, get_path, line_of

DEFAULT_GRACE_S = 10.0
DEFAULT_SIGNAL = "SIGTERM"


def is_compose(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("services"), dict)


def read_compose(path: str, document: YMap, env: Mapping[str, str]) -> ReadResult:
    result = ReadResult(understood=True)
    services = document["services"]
    for name, service in services.items():
        if not isinstance(service, YMap):
            result.skipped.append(Skipped(f"{path}:{line_of(services, name)}",
                                          f"service {name!r} is not a mapping"))  # fmt: skip
            continue
        argv = _argv(service.get("entrypoint"), env) + _argv(service.get("command"), env)
        args = find_worker(argv, env)
        if args is None:
            continue
        at = Source(path, service.line_of("command") if "command" in service else service.line)
        result.launches.append(
            make_launch(
                platform="compose",
                name=name,
                source=at,
                args=args,
                platform_grace=_grace(path, service, env, result),
                stop_signal=_signal(path, service, env),
                memory_limit=_memory(path, service, env),
                unit=Source(path, services.line_of(name)),
            )
        )
    return result


def _text(value: Any, env: Mapping[str, str]) -> Any:
    return interpolate(value, env) if isinstance(value, str) else value


def _argv(value: Any, env: Mapping[str, str]) -> list[str]:
    if isinstance(value, str):
        return split_command(value)
    if isinstance(value, list):
        return [str(item) for item in value if item is not None]
    return []


def _grace(path: str, service: YMap, env: Mapping[str, str], result: ReadResult) -> Value | None:
    label = "Compose stop_grace_period"
    raw = service.get("stop_grace_period")
    if raw is None:
        return Value(label, DEFAULT_GRACE_S, "s", Source(note="Docker Compose default"))
    amount = go_duration(_text(raw, env))
    at = Source(path, service.line_of("stop_grace_period"))
    if amount is None:
        result.skipped.append(Skipped(str(at), f"cannot read stop_grace_period {raw!r}"))
        return None
    return Value(label, amount, "s", at)


def _signal(path: str, service: YMap, env: Mapping[str, str]) -> Setting:
    raw = service.get("stop_signal")
    if raw is None:
        return Setting("Compose stop_signal", DEFAULT_SIGNAL, Source(note="Docker default"))
    name = signal_name(_text(raw, env)) or str(raw)
    return Setting("Compose stop_signal", name, Source(path, service.line_of("stop_signal")))


def _memory(path: str, service: YMap, env: Mapping[str, str]) -> Value | None:
    limits = get_path(service, "deploy", "resources", "limits")
    if isinstance(limits, YMap) and "memory" in limits:
        amount = memory_mb(_text(limits["memory"], env))
        if amount is not None:
            at = Source(path, limits.line_of("memory"))
            return Value("Compose memory limit", amount, "MB", at)
    if "mem_limit" in service:
        amount = memory_mb(_text(service["mem_limit"], env))
        if amount is not None:
            at = Source(path, service.line_of("mem_limit"))
            return Value("Compose mem_limit", amount, "MB", at)
    return None

"""Cloud Foundry application manifests (`cf push`): `applications:`, each with the `command:`
its processes run. CF sends SIGTERM and SIGKILLs the process 10 s later; a manifest cannot
change that window (FACTS.md), so every app gets the same fixed grace."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import memory_mb, seconds
from tenure.doctor.readers.yamlnodes import YMap

STOP_GRACE_S = 10.0


@dataclass
class App:
    name: str
    unit: Source  # the app's entry: what `cf` stops
    command_at: Source
    command: str
    instances: int
    memory_limit: Value | None


def is_cf_manifest(document: Any) -> bool:
    apps = document.get("applications") if isinstance(document, dict) else None
    return isinstance(apps, list) and any(isinstance(a, YMap) and "name" in a for a in apps)


def grace() -> Value:
    return Value(
        "Cloud Foundry shutdown window", STOP_GRACE_S, "s",
        Source(note="Cloud Foundry: SIGKILL 10 s after SIGTERM, not configurable"),
    )  # fmt: skip


def apps(path: str, document: YMap) -> Iterator[App]:
    """Each application with a start command of its own (a buildpack's default web process,
    without `command:`, runs no worker)."""
    for app in document["applications"]:
        if not isinstance(app, YMap) or not isinstance(app.get("command"), str):
            continue
        instances = seconds(app.get("instances") or 1)
        memory = memory_mb(str(app["memory"])) if "memory" in app else None
        at = Source(path, app.line_of("memory"))
        yield App(
            name=str(app.get("name", "?")),
            unit=Source(path, app.line),
            command_at=Source(path, app.line_of("command")),
            command=app["command"],
            instances=int(instances or 1),
            memory_limit=Value("Cloud Foundry memory", memory, "MB", at) if memory else None,
        )

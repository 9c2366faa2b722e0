"""DigitalOcean App Platform specs (`.do/app.yaml`, `doctl apps create --spec`): a map with
`name` and lists of components (`services`, `workers`, `jobs`), each with a `name`, a
`run_command` and `envs` (`- key: X` / `value: Y`), added to the app-level `envs`. The "Deploy
to DigitalOcean" button's `.do/deploy.template.yaml` holds the same spec under `spec:`. The
platform's stop grace for a component is not written in FACTS.md or FOREIGN.md: unknown, so no
grace is read (the worker's stop grace is said to be unread)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tenure.doctor.model import Source
from tenure.doctor.readers.yamlnodes import YMap

COMPONENTS = ("services", "workers", "jobs")


@dataclass
class Component:
    name: str
    unit: Source  # the component's entry in its list
    command_at: Source
    command: str
    instances: int
    envs: dict[str, tuple[str, Source]] = field(default_factory=dict)  # key -> (value, line)


def _spec(document: Any) -> Any:
    inner = document.get("spec") if isinstance(document, YMap) else None
    return inner if isinstance(inner, YMap) else document


def is_app_spec(document: Any) -> bool:
    """A map naming the app whose component lists hold maps with `run_command` (a Compose
    file's `services` is a map, never a list)."""
    document = _spec(document)
    if not isinstance(document, YMap) or "name" not in document:
        return False
    lists: list[list[Any]] = [
        v for k in COMPONENTS for v in [document.get(k)] if isinstance(v, list)
    ]
    return any(isinstance(c, YMap) and "run_command" in c for items in lists for c in items)


def _envs(path: str, raw: Any) -> dict[str, tuple[str, Source]]:
    out: dict[str, tuple[str, Source]] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, YMap) and "key" in item and item.get("value") is not None:
            out[str(item["key"])] = (str(item["value"]), Source(path, item.line_of("value")))
    return out


def components(path: str, document: YMap) -> Iterator[Component]:
    document = _spec(document)
    shared = _envs(path, document.get("envs"))
    for kind in COMPONENTS:
        items = document.get(kind)
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, YMap) or not isinstance(item.get("run_command"), str):
                continue
            count = item.get("instance_count")
            yield Component(
                name=str(item.get("name", kind)),
                unit=Source(path, item.line_of("name") if "name" in item else item.line),
                command_at=Source(path, item.line_of("run_command")),
                command=item["run_command"],
                instances=count if isinstance(count, int) and count > 0 else 1,
                envs={**shared, **_envs(path, item.get("envs"))},
            )

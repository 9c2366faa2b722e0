"""RoadRunner's `service:` plugin (`.rr.yaml`): long-running commands RoadRunner starts and
stops itself, `php artisan queue:work` among them. On stop it signals the process and kills it
`timeout_stop_sec` later, 5 s when unset (FACTS.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import seconds
from tenure.doctor.readers.yamlnodes import YMap

DEFAULT_STOP_S = 5.0


@dataclass
class Service:
    name: str
    unit: Source
    command_at: Source
    command: str
    processes: int
    grace: Value | None


def is_rr_config(document: Any) -> bool:
    """A RoadRunner config: `version:` beside a `service:` map whose entries have a command
    (no Compose file has `service:` at the top)."""
    if not isinstance(document, dict) or "version" not in document:
        return False
    services = document.get("service")
    return isinstance(services, YMap) and any(
        isinstance(s, YMap) and "command" in s for s in services.values()
    )


def services(path: str, document: YMap) -> Iterator[Service]:
    table = document["service"]
    for name, entry in table.items():
        if not isinstance(entry, YMap) or not isinstance(entry.get("command"), str):
            continue
        yield Service(
            name=str(name),
            unit=Source(path, table.line_of(name)),
            command_at=Source(path, entry.line_of("command")),
            command=entry["command"],
            processes=int(seconds(entry.get("process_num") or 1) or 1),
            grace=_grace(path, entry),
        )


def _grace(path: str, entry: YMap) -> Value | None:
    label = "RoadRunner service timeout_stop_sec"
    if "timeout_stop_sec" not in entry:
        return Value(label, DEFAULT_STOP_S, "s", Source(note="RoadRunner service default"))
    amount = seconds(entry["timeout_stop_sec"])
    at = Source(path, entry.line_of("timeout_stop_sec"))
    return Value(label, amount, "s", at) if amount is not None else None

"""The independent record of what ran, and the record of what was dispatched and injected."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Execution:
    """One entry into a job body: (job_id, attempt) run by process `pid` whose parent is `ppid`."""

    job_id: str
    attempt: int
    pid: int
    ppid: int
    started: float
    ended: float | None = None
    effects: int = 0
    last_seen: float = 0.0
    events: list[str] = field(default_factory=list)


def read_ledger(path: Path) -> list[Execution]:
    """Executions in the order they started. A torn last line (a writer killed mid-write
    cannot tear an O_APPEND write this short, but be safe) is ignored."""
    if not path.exists():
        return []
    runs: dict[tuple[str, int, int], Execution] = {}
    order: list[Execution] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) != 6:
            continue
        job_id, attempt, pid, ppid, event, at = parts
        key = (job_id, int(attempt), int(pid))
        when = float(at)
        run = runs.get(key)
        if event == "start" or run is None:
            run = Execution(job_id, int(attempt), int(pid), int(ppid), when)
            runs[key] = run
            order.append(run)
        run.events.append(event)
        run.last_seen = when
        if event == "end":
            run.ended = when
        elif event == "effect":
            run.effects += 1
    return order


def by_job(runs: list[Execution]) -> dict[str, list[Execution]]:
    out: dict[str, list[Execution]] = defaultdict(list)
    for r in runs:
        out[r.job_id].append(r)
    return out


class JsonLines:
    """An append-only JSON-lines file: dispatched ids, injected faults."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, **record: Any) -> None:
        record.setdefault("at", time.clock_gettime(time.CLOCK_REALTIME))
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(x) for x in self.path.read_text().splitlines() if x.strip()]

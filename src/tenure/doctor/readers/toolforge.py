"""Wikimedia Toolforge jobs files (`toolforge jobs load jobs.yaml`): a YAML list of jobs, each
with `name`, `command` and `image` (and `continuous`, `replicas`, `schedule`, `mem`...). The
jobs framework runs each as a Kubernetes pod whose terminationGracePeriodSeconds it sets to
15 s; no key of the file changes it (FACTS.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import k8s_memory_mb, seconds
from tenure.doctor.readers.yamlnodes import YMap

STOP_GRACE_S = 15.0
REQUIRED = ("name", "command", "image")


@dataclass
class Job:
    name: str
    unit: Source  # the job's entry: what `toolforge jobs restart` stops
    command_at: Source
    command: str
    replicas: int
    memory_limit: Value | None


def is_jobs_file(document: Any) -> bool:
    """A top-level list of maps that each name a job, its command and its image: the shape
    `toolforge jobs load` reads (a Compose file or a manifest is a map, never a list)."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(j, YMap) and all(k in j for k in REQUIRED) for j in document)
    )


def grace() -> Value:
    note = "Toolforge jobs framework: SIGKILL 15 s after SIGTERM, not configurable"
    return Value("Toolforge job shutdown window", STOP_GRACE_S, "s", Source(note=note))


def jobs(path: str, document: list[YMap]) -> Iterator[Job]:
    for job in document:
        if not isinstance(job.get("command"), str):
            continue
        memory = k8s_memory_mb(str(job["mem"])) if "mem" in job else None
        at = Source(path, job.line_of("mem")) if memory else Source()
        yield Job(
            name=str(job["name"]),
            unit=Source(path, job.line),
            command_at=Source(path, job.line_of("command")),
            command=job["command"],
            replicas=int(seconds(job.get("replicas") or 1) or 1),
            memory_limit=Value("Toolforge job mem", memory, "MB", at) if memory else None,
        )

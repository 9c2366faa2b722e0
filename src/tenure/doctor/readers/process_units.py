"""Procfile processes and systemd units as runners of a script: `worker: bin/start-stunnel
bin/run worker` or `ExecStart=/opt/app/bin/run worker` starts a project script that dispatches
to the worker, so the worker gets that unit's stop grace (the Procfile platform's about 30 s,
systemd's TimeoutStopSec or its 90 s default) and its findings go on that unit (CONVENTION.md:
the process line, the `[Service]` header)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.ini import read_ini, section_line
from tenure.doctor.readers.procfile import PLATFORM_GRACE_S
from tenure.doctor.readers.systemd import stop_timeout
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.walk import Tree, decode, is_development_name


@dataclass(frozen=True)
class ProcessUnit:
    label: str
    argv: list[str]
    grace: Value | None
    unit: Source


def process_units(tree: Tree) -> Iterator[ProcessUnit]:
    for found in tree.files["procfile"]:
        content = decode(found)
        if isinstance(content, str) and not is_development_name(found.rel):
            yield from _procfile(found.rel, content)
    for found in tree.files["systemd"]:
        content = decode(found)
        if isinstance(content, str) and not is_development_name(found.rel):
            yield from _systemd(found.rel, content)


def _procfile(path: str, text: str) -> Iterator[ProcessUnit]:
    grace = Value("Procfile platform shutdown window", PLATFORM_GRACE_S, "s",
                  Source(note="Heroku-style platform, about 30 s"))  # fmt: skip
    for number, line in enumerate(text.splitlines(), start=1):
        name, colon, command = line.partition(":")
        if colon and name.strip() and not name.strip().startswith("#") and command.strip():
            yield ProcessUnit(f"Procfile process {name.strip()}", split_command(command),
                              grace, Source(path, number))  # fmt: skip


def _systemd(path: str, text: str) -> Iterator[ProcessUnit]:
    last = {e.key: e for e in read_ini(text, backslash_continues=True) if e.section == "Service"}
    start = last.get("ExecStart")
    if start is None or not start.value:
        return
    argv = split_command(start.value.lstrip("-@+!:"))
    grace, _ = stop_timeout(path, last)
    header = Source(path, section_line(text, "Service"))
    yield ProcessUnit(f"systemd unit {os.path.basename(path)}", argv, grace, header)

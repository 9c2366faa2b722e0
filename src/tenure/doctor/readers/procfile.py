"""Procfile (Heroku-style platforms): `type: command`; the platform allows about 30 s between
SIGTERM and SIGKILL and its value cannot be changed from the file."""

from __future__ import annotations

from tenure.doctor.model import Setting, Source, Value
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.worker_command import find_worker, make_launch, split_command

PLATFORM_GRACE_S = 30.0


def read_procfile(path: str, text: str) -> ReadResult:
    result = ReadResult(understood=True)
    for number, line in enumerate(text.splitlines(), start=1):
        name, colon, command = line.partition(":")
        if not colon or not name.strip() or name.strip().startswith("#"):
            continue
        args = find_worker(split_command(command))
        if args is None:
            continue
        result.launches.append(
            make_launch(
                platform="procfile",
                name=name.strip(),
                source=Source(path, number),
                args=args,
                platform_grace=Value(
                    "Procfile platform shutdown window",
                    PLATFORM_GRACE_S,
                    "s",
                    Source(note="Heroku-style platform, about 30 s"),
                ),
                stop_signal=Setting("stop signal", "SIGTERM", Source(note="platform default")),
            )
        )
    return result

"""A systemd unit that stops its Celery worker with `ExecStop=/bin/kill -s QUIT $MAINPID`:
SIGQUIT is Celery's cold shutdown (running tasks are dropped at once), SIGKILL kills outright.
The worker gets no grace at all, whatever TimeoutStopSec says, and the line to change is the
ExecStop."""

from __future__ import annotations

import os
import re
from typing import Any

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.ini import read_ini

# `kill -s QUIT $MAINPID`, `kill -QUIT`, `kill -9`, `kill -SIGKILL`, `/bin/kill --signal=QUIT`
COLD = re.compile(
    r"(?:^|[\s/])kill\s+(?:-s\s+|--signal[=\s]+|-)(?:SIG)?(QUIT|KILL|3|9)\b.*\$\{?MAINPID",
    re.IGNORECASE,
)


def cold_stops(root: str, workers: list[Any]) -> None:
    """Give each systemd worker whose ExecStop sends SIGQUIT or SIGKILL a grace of 0 s there."""
    for w in workers:
        if w.platform != "systemd" or not w.source.path:
            continue
        try:
            with open(os.path.join(root, w.source.path), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        stops = [e for e in read_ini(text, backslash_continues=True)
                 if e.section == "Service" and e.key == "ExecStop"]  # fmt: skip
        if not stops:
            continue
        match = COLD.search(stops[-1].value.lstrip("-@+!:"))
        if match is None:
            continue
        signal = {"3": "QUIT", "9": "KILL"}.get(match.group(1), match.group(1).upper())
        what = "Celery's cold shutdown" if signal == "QUIT" else "no shutdown at all"
        w.platform_grace = Value(
            f"systemd ExecStop sends SIG{signal} ({what})", 0.0, "s",
            Source(w.source.path, stops[-1].line),
        )  # fmt: skip

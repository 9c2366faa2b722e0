"""systemd units: `TimeoutStopSec` (default 90 s), `KillSignal`, `KillMode`, `MemoryMax`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from tenure.doctor.model import Setting, Skipped, Source, Value
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.ini import Entry, read_ini, section_line
from tenure.doctor.readers.units import UNBOUNDED, memory_mb, signal_name, systemd_timespan
from tenure.doctor.readers.worker_command import find_worker, make_launch, split_command

DEFAULT_TIMEOUT_STOP_S = 90.0


def stop_timeout(path: str, last: Mapping[str, Entry]) -> tuple[Value | None, Skipped | None]:
    """The unit's stop grace: `TimeoutStopSec` (or `TimeoutSec`), else systemd's default;
    None, with why, when the value cannot be read."""
    stop = last.get("TimeoutStopSec") or last.get("TimeoutSec")
    if stop is None or not stop.value:
        return Value("systemd TimeoutStopSec", DEFAULT_TIMEOUT_STOP_S, "s",
                     Source(note="systemd DefaultTimeoutStopSec")), None  # fmt: skip
    amount = systemd_timespan(stop.value)
    at = Source(path, stop.line)
    if amount is None:
        return None, Skipped(str(at), f"cannot read {stop.key}={stop.value}")
    return Value(f"systemd {stop.key}", None if amount == UNBOUNDED else amount, "s", at), None


def read_unit(path: str, text: str) -> ReadResult:
    entries = [e for e in read_ini(text, backslash_continues=True) if e.section == "Service"]
    if not entries:
        return ReadResult(skipped=[Skipped(path, "no [Service] section: not a service unit")])
    result = ReadResult(understood=True)
    # Later assignments win in systemd; an empty assignment resets to the default.
    last = {e.key: e for e in entries}
    exec_start = last.get("ExecStart")
    if exec_start is None:
        return result
    # systemd prefixes: - ignore failure, @ argv0, + ! !! privileges, : no env expansion.
    command = exec_start.value.lstrip("-@+!:")
    args = find_worker(split_command(command))
    if args is None:
        return result
    grace, unreadable = stop_timeout(path, last)
    if unreadable is not None:
        result.skipped.append(unreadable)
    signal = last.get("KillSignal")
    stop_signal = (
        Setting("systemd KillSignal", signal_name(signal.value) or signal.value,
                Source(path, signal.line))
        if signal is not None and signal.value
        else Setting("systemd KillSignal", "SIGTERM", Source(note="systemd default"))
    )  # fmt: skip
    mode = last.get("KillMode")
    orphans = None
    if mode is not None and mode.value in ("process", "none"):
        orphans = Setting("systemd KillMode", mode.value, Source(path, mode.line))
    memory = last.get("MemoryMax") or last.get("MemoryLimit")
    memory_limit = None
    if memory is not None:
        amount = memory_mb(memory.value)
        if amount is not None:
            memory_limit = Value(f"systemd {memory.key}", amount, "MB", Source(path, memory.line))
    name = os.path.basename(path)
    result.launches.append(
        make_launch(
            platform="systemd",
            name=name,
            source=Source(path, exec_start.line),
            args=args,
            platform_grace=grace,
            stop_signal=stop_signal,
            memory_limit=memory_limit,
            orphans_children=orphans,
            unit=Source(path, section_line(text, "Service")),
        )
    )
    return result

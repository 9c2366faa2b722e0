"""The kernel's OOM kills in this worker's cgroup, read around an attempt: what confirms an
outside SIGKILL as the OOM killer's (`causes.of_exit` takes the counts; reading them is I/O, so
it lives here, beside the child process that asks)."""

from __future__ import annotations

import contextlib
import os


def _cgroup_memory_events() -> str | None:
    """This process's cgroup's memory.events (cgroup v2), or v1's memory.oom_control."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: the unified hierarchy
            mount, name = "/sys/fs/cgroup", "memory.events"
        elif "memory" in controllers.split(","):
            mount, name = "/sys/fs/cgroup/memory", "memory.oom_control"
        else:
            continue
        # the path as the host names it; in a container (a cgroup namespace) the mount's root
        # is the container's own cgroup
        for candidate in (f"{mount}{path.rstrip('/')}/{name}", f"{mount}/{name}"):
            if os.path.exists(candidate):
                return candidate
    return None


_EVENTS: list[str | None] = []


def _events_path() -> str | None:
    """_cgroup_memory_events(), found once per process (a worker's cgroup does not change)."""
    if not _EVENTS:
        _EVENTS.append(_cgroup_memory_events())
    return _EVENTS[0]


def oom_kills() -> int | None:
    """How many processes the kernel's OOM killer killed in this worker's cgroup so far; None
    where no cgroup's memory events can be read (then an outside SIGKILL is not confirmed as
    OOM)."""
    path = _events_path()
    if path is None:
        return None
    with contextlib.suppress(OSError, ValueError), open(path) as f:
        for line in f:
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    return None


def counted_in() -> str:
    """The file that counted the kills, as a reader of the attempt would look for it."""
    path = _events_path()
    return os.path.basename(path) if path else "memory.events"


def memory_limit_mb() -> int | None:
    """The memory limit of this worker's cgroup (v2 memory.max, v1 memory.limit_in_bytes), in
    MB; None where there is none (v1 writes "no limit" as a number near 2**63)."""
    path = _events_path()
    if path is None:
        return None
    directory = os.path.dirname(path)
    for name in ("memory.max", "memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError), open(os.path.join(directory, name)) as f:
            text = f.read().strip()
            if text == "max" or int(text) >= 2**60:
                return None
            return int(text) // (1024 * 1024)
    return None

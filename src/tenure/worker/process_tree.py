"""The processes of one attempt: the child and everything it started, found in /proc.

Each child process leads its own session (see ChildProcess), so what a job starts (ffmpeg,
chromium, `sleep`) stays in that session even after its parent exits and it is re-parented to
init. Killing the session's process group, then any descendant that left the group, ends the
whole tree; killing only the child would leave its subprocesses running forever.

Run as a script (by path, so it imports nothing of tenure), this module is the reaper: a
process the supervisor starts once and tells, line by line, which child sessions exist
(`+PID`, `-PID`). When its input ends without the children having been forgotten, the
supervisor died without cleaning up (SIGKILL, the OOM killer): the children die with it by
PDEATHSIG, and the reaper kills what their jobs started, which PDEATHSIG does not reach.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _all_pids() -> Iterable[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return (int(name) for name in names if name.isdigit())


def tree(root: int) -> list[int]:
    """`root`, its descendants, and every process still in its session: the attempt's tree."""
    parents: dict[int, int] = {}
    members = {root}
    for pid in _all_pids():
        fields = _stat_fields(pid)
        if fields is None or len(fields) < 4:
            continue
        # fields: state, ppid, pgrp, session, ...
        ppid, session = int(fields[1]), int(fields[3])
        parents[pid] = ppid
        if session == root:
            members.add(pid)
    changed = True
    while changed:  # descendants that started a session or group of their own
        changed = False
        for pid, ppid in parents.items():
            if ppid in members and pid not in members:
                members.add(pid)
                changed = True
    return sorted(members)


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_SIZE / 1_048_576
    except (OSError, ValueError, IndexError):
        return 0.0


def tree_rss_mb(root: int) -> float:
    """Resident memory of the whole tree: a job's subprocesses count against its cap."""
    return sum(rss_mb(pid) for pid in tree(root))


def memory_note(reading: tuple[float, float] | None, now: float) -> str:
    """The words a crash is recorded with for its attempt's last memory reading, (MB,
    monotonic time): the evidence for an OOM kill (or against it); nothing without one."""
    if reading is None or reading[0] <= 0:
        return ""
    mb, at = reading
    size = f"{mb / 1024:.1f} GB" if mb >= 1024 else f"{mb:.0f} MB"
    return f"; its last memory reading was {size}, {max(0.0, now - at):.1f} s before it died"


def kill_tree(root: int) -> None:
    """SIGKILL the attempt's process group and every other process of its tree."""
    members = tree(root)  # before the kill: then descendants are still linked by their parent
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, signal.SIGKILL)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_session(session: int) -> None:
    """SIGKILL every process still in `session` (its leader may be gone already)."""
    for pid in _all_pids():
        fields = _stat_fields(pid)
        if fields is not None and len(fields) >= 4 and int(fields[3]) == session:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def reap_when_closed(lines: Iterable[str]) -> None:
    """The reaper's loop: track `+PID` / `-PID`; when the input ends, kill what is tracked."""
    sessions: set[int] = set()
    for line in lines:
        sign, pid = line[:1], int(line[1:])
        if sign == "+":
            sessions.add(pid)
        else:
            sessions.discard(pid)
    for session in sessions:
        kill_session(session)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Leave the supervisor's children (its parent exits now): the supervisor's own child
    # processes stay the ones that run jobs, and the reaper outlives it.
    if os.fork():
        os._exit(0)
    reap_when_closed(sys.stdin)

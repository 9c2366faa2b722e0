"""What a system's workers hold in memory once warm: the proportional set size (PSS) of every
process of their trees, read from /proc. PSS splits a page shared by N processes (a prefork
pool's copy-on-write interpreter) N ways, so a pool of forked children is not counted N times
over as summed RSS would count it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable


def _parents() -> dict[int, int]:
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            out[int(name)] = int(fields[1])
    return out


def descendants(roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them, whatever session or group they moved to."""
    parents = _parents()
    members = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in members and pid not in members:
                members.add(pid)
                grew = True
    return members


def pss_mb(pid: int) -> float:
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_pss_mb(roots: Iterable[int]) -> tuple[float, int]:
    """Total PSS in MB of the trees under `roots`, and how many processes that is."""
    members = descendants(roots)
    return sum(pss_mb(pid) for pid in members), len(members)

"""Marks: how every system's job tells the harness it ran, the same way for all of them.

A job appends one fixed-size record (its number, the wall-clock time, an executor tag) to a file
with a single O_APPEND write, which is atomic for a record this small on a local file system, so
processes and threads can share the file without a lock. The cost (one syscall) is the same for
every system and small next to any queue's per-job work, and reading the file tells the harness
how many jobs ran, when, and in how many processes, without asking each queue in its own words.

Standard library only: this module is imported by tenure's venv and by the peers' venvs.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass

RECORD = struct.Struct("<qdq")  # job number, time.time(), executor tag (a pid)
MARKS_ENV = "BENCH_MARKS"

_fd: int | None = None
_fd_pid = 0


def mark(n: int, tag: int | None = None) -> None:
    """Record that job `n` ran now. `tag` names the executing process (default: this pid)."""
    global _fd, _fd_pid
    pid = os.getpid()
    if _fd is None or _fd_pid != pid:  # a forked child opens its own descriptor
        _fd = os.open(os.environ[MARKS_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        _fd_pid = pid
    os.write(_fd, RECORD.pack(n, time.time(), pid if tag is None else tag))


@dataclass(frozen=True)
class Mark:
    n: int
    at: float
    tag: int


def count(path: str) -> int:
    try:
        return os.stat(path).st_size // RECORD.size
    except FileNotFoundError:
        return 0


def read(path: str) -> list[Mark]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    usable = len(data) - len(data) % RECORD.size
    return [Mark(*fields) for fields in RECORD.iter_unpack(data[:usable])]


def wait_for_count(path: str, target: int, timeout: float, poll: float = 0.002) -> bool:
    """Wait until `target` marks exist; False if `timeout` s pass first."""
    deadline = time.monotonic() + timeout
    while count(path) < target:
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)  # polling a condition, not a fixed delay: returns as soon as it holds
    return True

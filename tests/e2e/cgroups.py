"""A memory-limited cgroup for a test's worker, as a container's limit would be: where this
machine lets the test create one (cgroup v1's memory hierarchy, or a v2 subtree with the memory
controller delegated); None elsewhere, and the caller skips saying why."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def _own_v2_cgroup() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return V2 / line[3:].lstrip("/")
    return None


def _create(limit_mb: int) -> Path | None:
    """The new cgroup's directory, its limit set; None where none can be made."""
    name = f"tenure-test-{secrets.token_hex(4)}"
    candidates: list[tuple[Path, str]] = []
    if (V1 / "memory.limit_in_bytes").exists():
        candidates.append((V1 / name, "memory.limit_in_bytes"))
    own = _own_v2_cgroup()
    if own is not None and "memory" in _read(own / "cgroup.subtree_control"):
        candidates.append((own / name, "memory.max"))
    for directory, limit_file in candidates:
        try:
            directory.mkdir()
        except OSError:
            continue
        try:
            (directory / limit_file).write_text(str(limit_mb * 1024 * 1024))
            if limit_file == "memory.limit_in_bytes":
                # no swap to spill into, where the kernel accounts it: the limit is the limit
                with contextlib.suppress(OSError):
                    (directory / "memory.memsw.limit_in_bytes").write_text(
                        str(limit_mb * 1024 * 1024)
                    )
            else:
                with contextlib.suppress(OSError):
                    (directory / "memory.swap.max").write_text("0")
            return directory
        except OSError:
            with contextlib.suppress(OSError):
                directory.rmdir()
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@contextlib.contextmanager
def memory_cgroup(limit_mb: int) -> Iterator[Path | None]:
    """Yields the cgroup's `cgroup.procs` (write a pid there to move it in), or None."""
    directory = _create(limit_mb)
    try:
        yield directory / "cgroup.procs" if directory else None
    finally:
        if directory is not None:
            for pid in _read(directory / "cgroup.procs").split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), 9)
            with contextlib.suppress(OSError):
                directory.rmdir()

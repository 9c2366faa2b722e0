"""The attempt's process tree, found and killed with real processes: descendants, one that left
the group, and an orphan re-parented to init after its parent exited."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.worker import process_tree
from tenure.worker.store_file import StoreFile

# A session leader that starts: a plain `sleep`, a `sleep` in a process group of its own, and a
# `sleep` whose parent shell exits at once (the orphan); then it prints their pids.
SPAWN = """
import os, subprocess, sys, time
plain = subprocess.Popen(["sleep", "1000"])
own_group = subprocess.Popen(["sleep", "1000"], process_group=0)
shell = subprocess.Popen(["sh", "-c", "sleep 1000 & echo $!"], stdout=subprocess.PIPE, text=True)
orphan = int(shell.stdout.readline())
shell.wait()
print(plain.pid, own_group.pid, orphan, flush=True)
time.sleep(1000)
"""


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def wait_gone(pids: list[int], timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [pid for pid in pids if running(pid)]
        if not left:
            return []
        time.sleep(0.02)
    return left


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SPAWN], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    with proc:  # closes its pipe
        try:
            yield proc
        finally:
            if proc.returncode is None:
                process_tree.kill_tree(proc.pid)
            proc.wait(timeout=10)


def test_tree_finds_descendants_and_orphans_and_kill_tree_ends_them(
    leader: subprocess.Popen[str],
) -> None:
    assert leader.stdout is not None
    spawned = [int(pid) for pid in leader.stdout.readline().split()]
    assert len(spawned) == 3
    members = process_tree.tree(leader.pid)
    assert set(spawned) | {leader.pid} <= set(members), (spawned, members)
    assert os.getpid() not in members
    assert process_tree.tree_rss_mb(leader.pid) > process_tree.rss_mb(leader.pid)

    process_tree.kill_tree(leader.pid)
    assert wait_gone([*spawned]) == []
    assert leader.wait(timeout=10) == -9


def test_store_file_notices_a_deleted_or_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    path.write_bytes(b"x")
    watch = StoreFile(str(path))
    assert watch.problem() is None
    path.unlink()
    assert "was deleted or replaced" in (watch.problem() or "")
    path.write_bytes(b"y")  # re-created: another inode
    assert "is another file now" in (watch.problem() or "")
    assert StoreFile(None).problem() is None

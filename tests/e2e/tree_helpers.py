"""Fixtures and checks for the worker tests on process trees, stopping and draining."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import helpers
from e2e.helpers import Project, WorkerProcess, wait_until

TREE_TEMPLATE = Path(__file__).with_name("tree_jobs_template.py")


@contextlib.contextmanager
def tree_project(directory: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """A Project on the tree jobs module; grandchildren it recorded are killed afterwards, so a
    failing test leaves no `sleep 1000` behind."""
    monkeypatch.setattr(helpers, "TEMPLATE", TREE_TEMPLATE)
    project = Project(directory, url)
    try:
        yield project
    finally:
        project.stop_all()
        for pid in grandchildren(project):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def grandchildren(project: Project) -> list[int]:
    """Pids of the processes jobs started, as the jobs noted them in the ledger."""
    return [
        int(event.split(":", 1)[1])
        for _, _, _, event, _ in project.ledger.lines()
        if event.startswith("grandchild:")
    ]


def running(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its parent to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def wait_for_grandchild(project: Project) -> int:
    (pid,) = wait_until(lambda: grandchildren(project), 60, "the job to start its process")
    assert running(pid)
    return pid


def messages(worker: WorkerProcess) -> list[str]:
    """The worker's log messages as a person reads them (JSON lines decoded)."""
    out = []
    for line in worker.log().splitlines():
        try:
            out.append(str(json.loads(line)["msg"]))
        except (ValueError, KeyError, TypeError):
            out.append(line)
    return out

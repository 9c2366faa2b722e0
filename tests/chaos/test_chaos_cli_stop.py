"""`python -m chaos run` stopped by SIGTERM or SIGHUP (a CI timeout, a closed terminal) takes its
workers with it: each runs in a session of its own, so nothing else would stop them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chaos.harness import children_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RUN = ["run", "--backend", "sqlite", "--scenario", "kill-workers", "--set", "jobs=100000"]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], deadline_s: float, what: str) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {deadline_s:g} s waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_stopped_chaos_run_leaves_no_worker_behind(signum: int, tmp_path: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-m", "chaos", *RUN, "--no-report"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: len(children_of(run.pid)) >= 2, 120, "the run's workers to start")
        workers = children_of(run.pid)
        their_children = [c for w in workers for c in children_of(w)]
        run.send_signal(signum)
        assert run.wait(timeout=120) == 128 + signum
        left = [pid for pid in workers + their_children if alive(pid)]
        wait_for(lambda: not [pid for pid in left if alive(pid)], 30, f"{left} to end")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()

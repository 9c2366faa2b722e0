"""The supervisor's side of the reaper (see process_tree): one per supervisor process, told of
every child session it starts and forgets, so a supervisor killed without warning does not
leave its jobs' subprocesses (ffmpeg, chromium, `sleep`) running on the host."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from typing import IO

from tenure.worker import process_tree


class Reaper:
    def __init__(self) -> None:
        launcher = subprocess.Popen(
            [sys.executable, "-S", process_tree.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or a group kill of the worker does not reach it
            text=True,
        )
        assert launcher.stdin is not None
        self._pipe: IO[str] = launcher.stdin
        launcher.wait()  # it forked the reaper and exited
        self._lock = threading.Lock()

    def watch(self, session: int) -> None:
        self._say(f"+{session}")

    def forget(self, session: int) -> None:
        self._say(f"-{session}")

    def _say(self, line: str) -> None:
        # A reaper someone killed only costs this safety net, never the worker.
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._pipe.write(line + "\n")
            self._pipe.flush()


_reaper: Reaper | None = None
_started = threading.Lock()


def reaper() -> Reaper:
    """This process's reaper, started on first use (slots start children from threads)."""
    global _reaper
    with _started:
        if _reaper is None:
            _reaper = Reaper()
        return _reaper

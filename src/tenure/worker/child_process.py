"""The supervisor's handle on one child process: start, send an attempt, wait, signal, kill."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any

from tenure.worker.child import LEASE_DANGER_SIGNAL, SOFT_TIMEOUT_SIGNAL

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
STARTUP_TIMEOUT_S = 60.0


class ChildDied(Exception):
    """The child process ended while it was expected to answer."""


class ChildProcess:
    def __init__(self, app_spec: str) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tenure.worker.child",
                app_spec,
                str(to_child_r),
                str(from_child_w),
                str(os.getpid()),
            ],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._out = os.fdopen(to_child_w, "w", encoding="utf-8")
        self._in_fd = from_child_r
        self._buffer = b""
        self.jobs_run = 0
        self.ready = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self) -> None:
        if not self.ready:
            answer = self.receive(STARTUP_TIMEOUT_S)
            if answer is None or answer.get("status") != "ready":
                self.kill()
                raise ChildDied(f"child process did not start: {answer!r}")
            self.ready = True

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message) + "\n")
        self._out.flush()
        self.jobs_run += 1

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, None if none came within `timeout`; ChildDied if the pipe closed."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._in_fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._in_fd, 65536)
            if not chunk:
                raise ChildDied(self.exit_description())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def soft_timeout(self) -> None:
        self._signal(SOFT_TIMEOUT_SIGNAL)

    def warn_lease(self) -> None:
        self._signal(LEASE_DANGER_SIGNAL)

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signum)

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.proc.pid}/statm") as f:
                return int(f.read().split()[1]) * PAGE_SIZE / 1_048_576
        except (OSError, ValueError, IndexError):
            return 0.0

    def kill(self) -> None:
        self._signal(signal.SIGKILL)
        self._close_pipes()
        self.proc.wait()

    def stop(self) -> None:
        """Ask an idle child to exit (its input closes), kill it if it lingers."""
        self._close_pipes()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def _close_pipes(self) -> None:
        if self._out.closed:
            return
        for close in (self._out.close, lambda: os.close(self._in_fd)):
            with contextlib.suppress(OSError):
                close()

    def exit_description(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"child process (pid {self.pid}) closed its pipe but is still running"
        return describe_exit(self.pid, code)


def describe_exit(pid: int, code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else "?"
        hint = " (the kernel's OOM killer, or someone's kill -9?)" if -code == 9 else ""
        return f"child process (pid {pid}) was killed by signal {-code} ({name}){hint}"
    return f"child process (pid {pid}) exited with code {code} during the attempt"

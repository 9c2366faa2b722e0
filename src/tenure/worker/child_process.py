"""The supervisor's handle on one child process: start, hand it an attempt, read what it says,
signal it, kill it (and whatever its jobs started)."""

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

from tenure.core import causes
from tenure.worker import messages, oom, process_tree
from tenure.worker.cancel_mark import CancelMark
from tenure.worker.child import CANCEL_SIGNAL, LEASE_DANGER_SIGNAL, STOP_CLAIMING_SIGNAL
from tenure.worker.log_spool import LogSpool
from tenure.worker.reaper import reaper

STARTUP_TIMEOUT_S = 60.0
# The child's stderr, where its log goes: the supervisor's own descriptor 2, inherited
# (whatever object sys.stderr is in the supervisor).
CHILD_STDERR = 2


class ChildDied(Exception):
    """The child process ended while it was expected to answer."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause  # tenure.core.causes: who ended it, when its exit status is known


class ChildProcess:
    def __init__(self, config: dict[str, Any]) -> None:
        """`config`: what the child needs to run and record attempts (see child.Child)."""
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self._mark = CancelMark.create()
        self.attempts = messages.AttemptSlot.create()
        self.spool = LogSpool.create()
        # the last record of the slot, read when the child was killed (the page is closed)
        self._last_held: tuple[int, messages.Started | None] | None = None
        pages = {
            "cancel_fd": self._mark.fd,
            "slot_fd": self.attempts.fd,
            "spool_fd": self.spool.fd,
        }
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tenure.worker.child",
                json.dumps({**config, "parent": os.getpid(), **pages}),
                str(to_child_r),
                str(from_child_w),
            ],
            pass_fds=(to_child_r, from_child_w, config["pulse_fd"], *pages.values()),
            stdin=subprocess.DEVNULL,
            # A session of its own: whatever the job starts can be killed with it (killpg),
            # and a Ctrl-C in the worker's terminal reaches none of it.
            start_new_session=True,
        )
        reaper().watch(self.proc.pid)
        # the cgroup's OOM kills so far: one more when this child dies of SIGKILL names the
        # kernel's OOM killer as its cause (causes.of_exit, counted by oom.oom_kills)
        self._oom_kills = oom.oom_kills()
        os.close(to_child_r)
        os.close(from_child_w)
        self._out = os.fdopen(to_child_w, "wb")
        self._in_fd = from_child_r
        self._buffer = b""
        self.jobs_run = 0
        self.ready = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self) -> None:
        if not self.ready:
            answer: object
            try:
                answer = self.receive(STARTUP_TIMEOUT_S)
            except messages.Garbled as exc:
                answer = exc
            if not (isinstance(answer, list) and isinstance(answer[0], messages.Ready)):
                self.kill()
                raise ChildDied(f"child process did not start: {answer!r}")
            self.ready = True

    def send(self, line: bytes) -> None:
        """Write one line of messages.encode (a Run) to the child."""
        self._out.write(line)
        self._out.flush()
        self.jobs_run += 1

    def receive(self, timeout: float) -> list[messages.Message] | None:
        """The messages of the child's next write (one line: at least one message, in the
        order written), None if none came within `timeout`; ChildDied if the pipe closed,
        messages.Garbled if the child wrote a line that is not a message."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = max(0.0, deadline - time.monotonic())  # 0: look once, do not wait
            ready, _, _ = select.select([self._in_fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._in_fd, 65536)
            if not chunk:
                why = self.exit_description()  # waits for the exit status the cause reads
                raise ChildDied(why, self.exit_cause())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return messages.decode(line)

    def buffered(self) -> bool:
        """A whole line is already read from the pipe (receive() returns it at once)."""
        return b"\n" in self._buffer

    def has_message(self, timeout: float) -> bool:
        """A whole message is waiting, or comes within `timeout` (not read yet)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._in_fd], [], [], remaining)
            if not ready:
                return False
            chunk = os.read(self._in_fd, 65536)
            if not chunk:
                return False  # the pipe closed: receive() says how the child ended
            self._buffer += chunk
        return True

    def pending(self) -> list[messages.Message]:
        """The messages already written and not yet read (a dead child's last words too)."""
        found: list[messages.Message] = []
        with contextlib.suppress(ChildDied, OSError, ValueError):
            while (said := self.receive(0)) is not None:
                found.extend(said)
        return found

    def alive(self) -> bool:
        return self.proc.poll() is None

    def held(self) -> tuple[int, messages.Started | None] | None:
        """The child's attempt slot: (its sequence, the attempt it names or None); None while
        a write is under way (or if the child died in one)."""
        if self._out.closed:  # killed: the slot as it was then
            return self._last_held
        return self.attempts.read()

    def stop_claiming(self) -> None:
        self._signal(STOP_CLAIMING_SIGNAL)

    def warn_lease(self) -> None:
        self._signal(LEASE_DANGER_SIGNAL)

    def cancel(self, job_id: str, token: int) -> None:
        """The soft stop of a cancelled attempt: CancelRequested inside the job, if the child is
        still running that attempt (the mark names it; see cancel_mark.py)."""
        self._mark.mark(job_id, token)
        self._signal(CANCEL_SIGNAL)

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signum)

    def rss_mb(self) -> float:
        """The child process alone: what recycling it between jobs gives back."""
        return process_tree.rss_mb(self.proc.pid)

    def tree_rss_mb(self) -> float:
        """The child and every process the job started: what the memory cap counts."""
        return process_tree.tree_rss_mb(self.proc.pid)

    def kill(self) -> list[messages.Message]:
        """SIGKILL the child and every process the job started; return what it wrote before
        it died that was not read yet."""
        if self.proc.returncode is None:  # not reaped yet: its pid cannot name another process
            process_tree.kill_tree(self.proc.pid)
        else:  # it died on its own; what it started may still run
            self._kill_leftovers()
        self.proc.wait()
        reaper().forget(self.proc.pid)
        last_words = [] if self._out.closed else self.pending()
        if not self._out.closed:
            self._last_held = self.attempts.read()
        self._close_pipes()
        return last_words

    def stop(self) -> None:
        """Ask an idle child to exit (its input closes), kill it if it lingers; processes a
        job left running in the child's session, or adopted by it, go with it."""
        # before it exits: then what it adopted (see child.adopt_orphans) still names it
        adopted = [pid for pid in process_tree.tree(self.proc.pid) if pid != self.proc.pid]
        self._close_pipes()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        self._kill_leftovers()
        for pid in adopted:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaper().forget(self.proc.pid)

    def _kill_leftovers(self) -> None:
        # A process group outlives its leader while a member lives, and Linux does not reuse
        # the id meanwhile: after the child was reaped, killpg still reaches only its session.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _close_pipes(self) -> None:
        """Close the pipes and pages; the child has exited or is killed: first the log lines
        it gathered and did not write (log_spool.py) are written for it."""
        if self._out.closed:
            return
        if self.proc.poll() is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
                self.spool.drain(CHILD_STDERR)
        closes = (
            self._out.close,
            lambda: os.close(self._in_fd),
            self._mark.close,
            self.attempts.close,
            self.spool.close,
        )
        for close in closes:
            with contextlib.suppress(OSError):
                close()

    def exit_cause(self) -> str | None:
        """Who ended the child, which died on its own (the worker did not kill it)."""
        code = self.proc.returncode
        if code is None:
            return None
        return causes.of_exit(code, self._oom_kills, oom.oom_kills())

    def exit_description(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"child process (pid {self.pid}) closed its pipe but is still running"
        return describe_exit(self.pid, code, self.exit_cause())


def describe_exit(pid: int, code: int, cause: str | None = None) -> str:
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else "?"
        hint = ""
        if cause == causes.OOM_KILL:
            limit = oom.memory_limit_mb()
            within = f"; the cgroup's memory limit is {limit} MB" if limit else ""
            counted = f"counted in its cgroup's {oom.counted_in()}{within}"
            hint = f" by the kernel's OOM killer ({counted})"
        elif -code == signal.SIGKILL:
            hint = " from outside the worker; OOM not confirmed (no OOM kill in its cgroup)"
            if oom.oom_kills() is None:
                hint = " from outside the worker; OOM not confirmed (no cgroup to read)"
        elif cause == causes.FAULT:
            hint = ": the process crashed (a segfault or an abort, in the job or a C extension)"
        return f"child process (pid {pid}) was killed by signal {-code} ({name}){hint}"
    return f"child process (pid {pid}) exited with code {code} during the attempt"

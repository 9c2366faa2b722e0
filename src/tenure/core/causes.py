"""Why an attempt ended, as a word the store keeps beside its outcome (`AttemptRecord.cause`):
the words `tenure jobs show`, the dashboard and the `tenure_crashes_total{job,cause}` metric
share. The outcome says what happened to the job (`crashed`, `timed_out`); the cause says who
ended the process: the worker itself (timeout, memory cap, lost lease, cancel, hard stop), the
kernel's OOM killer, a signal from outside, the job's own code (an exception, `os._exit`), or
nobody the store heard from (the worker vanished).
"""

from __future__ import annotations

import signal

EXCEPTION = "exception"  # the job raised
TIMEOUT = "timeout"  # the worker's timeout (JobTimeout, then the kill at timeout + kill_after)
MEMORY_CAP = "memory_cap"  # the worker's --memory cap
LOST_LEASE = "lost_lease"  # the worker stopped it: its lease could not be renewed
CANCEL = "cancel"  # app.cancel / tenure jobs cancel
HARD_STOP = "hard_stop"  # the worker's second SIGTERM / Ctrl-C, or the end of --grace
OOM_KILL = "oom_kill"  # the kernel's OOM killer, confirmed by the cgroup's memory.events
SIGKILL = "sigkill"  # SIGKILL from outside the worker; OOM not confirmed
SIGNAL = "signal"  # another signal from outside (its name is in the error)
FAULT = "fault"  # the process crashed: a segfault, an abort, a bus error
EXIT = "exit"  # the process exited by itself mid-attempt (os._exit, sys.exit in a thread)
WORKER_VANISHED = "worker_vanished"  # its lease expired with no end: worker or host gone
UNKNOWN_JOB = "unknown_job"  # this worker's code defines no job of that name (rolling deploy)
DEPLOY = "deploy"  # its worker had begun stopping (SIGTERM) and died before the attempt ended

WORDS = {
    EXCEPTION: "the job raised an exception",
    TIMEOUT: "the worker's timeout",
    MEMORY_CAP: "the worker's memory cap",
    LOST_LEASE: "the worker stopped it: lease lost",
    CANCEL: "cancelled",
    HARD_STOP: "the worker's hard stop",
    OOM_KILL: "killed by the kernel's OOM killer",
    SIGKILL: "SIGKILL from outside the worker; OOM not confirmed",
    SIGNAL: "a signal from outside the worker",
    FAULT: "the process crashed (segfault, abort)",
    EXIT: "the process exited by itself",
    WORKER_VANISHED: "the worker vanished (lease expired)",
    DEPLOY: "killed at the end of a deploy's grace",
    UNKNOWN_JOB: "a worker that does not know the job",
}

FAULT_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}
)


def words(cause: str | None) -> str:
    return "" if cause is None else WORDS.get(cause, cause)


def of_exit(code: int, oom_kills_before: int | None, oom_kills_after: int | None) -> str:
    """The cause of a child process that died on its own (not killed by the worker), from its
    exit status (negative: the signal) and its cgroup's oom_kill count around the attempt."""
    if code >= 0:
        return EXIT
    signum = -code
    if signum == signal.SIGKILL:
        if (
            oom_kills_before is not None
            and oom_kills_after is not None
            and oom_kills_after > oom_kills_before
        ):
            return OOM_KILL
        return SIGKILL
    if signum in FAULT_SIGNALS:
        return FAULT
    return SIGNAL


def of_rescue(worker_stopping_at: float | None) -> str:
    """The cause a rescue records: the end of a deploy's grace when the attempt's worker had
    begun stopping (its SIGTERM), else a vanished worker."""
    return WORKER_VANISHED if worker_stopping_at is None else DEPLOY

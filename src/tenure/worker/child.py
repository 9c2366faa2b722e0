"""The child process that runs and records sync attempts, one at a time, for its supervisor.

The child holds its own store connection: it runs the attempt the supervisor gave it, records
its end and, on a success, claims the slot's next job in the same store call, then runs that,
never waiting for the supervisor: it names the attempt it runs in its attempt slot (shared
memory, messages.AttemptSlot) and tells the rest by one-way messages (messages.py), gathered
with its log lines (log_spool.py) while it is busy.
The supervisor watches: it renews the leases, kills the child at a hard timeout or over the
memory cap, and records the end of an attempt the child died in.

The child ignores SIGINT and SIGTERM: shutdown is the supervisor's decision, so a Ctrl-C in
the terminal cannot kill a job behind its back. The soft timeout is the child's own (SIGALRM,
armed per attempt): JobTimeout is raised inside the job. SIGUSR2 tells the job its lease is in
danger (`tenure.current().lease_ok()` turns False); SIGHUP says the worker is stopping: claim
nothing more; SIGUSR1 says the attempt the cancel mark names was cancelled: CancelRequested is
raised inside the job and `tenure.current().cancelled` turns True (cancel_mark.py).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import random
import signal
import sys
import threading
import time
from types import FrameType
from typing import IO, Any

from tenure.core.errors import CancelRequested, JobTimeout
from tenure.core.records import Ending, EndResult, Reservation, WorkerRef
from tenure.job import Job
from tenure.loading import load_app
from tenure.logs import log_end, setup_logging, spool_lines
from tenure.settings import weighted_order
from tenure.worker import messages
from tenure.worker.cancel_mark import CancelMark
from tenure.worker.execute import Ended, SoftTimeout, definition, execute
from tenure.worker.log_spool import FLUSH_S, LogSpool
from tenure.worker.messages import Pulse
from tenure.worker.process_tree import rss_mb
from tenure.worker.recording import Recorder

LEASE_DANGER_SIGNAL = signal.SIGUSR2
STOP_CLAIMING_SIGNAL = signal.SIGHUP
CANCEL_SIGNAL = signal.SIGUSR1
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# A child over this share of --memory between jobs leaves, to be replaced, rather than be
# killed in the middle of its next job.
RECYCLE_SHARE = 0.8
# A Tally this large goes out at once: a line stays under PIPE_BUF (4,096 bytes), one atomic
# write, so a kill cannot leave half of one.
TALLY_BYTES = 3000
# A busy child reaps the orphans that ended at most this often (one system call and the
# exception of "no child" each time), and always before it waits for its next order.
REAP_S = FLUSH_S

log = logging.getLogger("tenure.worker")
# an Ending's fields after its result, a success's defaults (records.Ending)
_SUCCESS = tuple(Ending._field_defaults[field] for field in Ending._fields[4:])
_NEW_TUPLE = tuple.__new__


class _State:
    lease_ok = True
    stopping = False
    cancelled = False  # the current attempt was cancelled
    attempt: tuple[str, int] = ("", 0)  # (job id, token) of the attempt being run
    mark: CancelMark | None = None

    # the context's callbacks: one function for every attempt, not a closure built per job
    @staticmethod
    def is_lease_ok() -> bool:
        return _State.lease_ok

    @staticmethod
    def is_cancelled() -> bool:
        return _State.cancelled


def _on_soft_timeout(signum: int, frame: FrameType | None) -> None:
    # Only while a job runs: a late signal must not break the child's own loop.
    if SoftTimeout.running:
        raise JobTimeout()


def _on_lease_danger(signum: int, frame: FrameType | None) -> None:
    _State.lease_ok = False


def _on_stop_claiming(signum: int, frame: FrameType | None) -> None:
    _State.stopping = True


def _on_cancel(signum: int, frame: FrameType | None) -> None:
    # Only for the attempt the mark names: the signal may come late, after the next began.
    if _State.mark is None or not _State.mark.names(*_State.attempt):
        return
    _State.cancelled = True
    if SoftTimeout.running:
        raise CancelRequested()


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this child when the supervisor dies, so that a killed worker's job
    cannot keep running while another worker re-runs it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def adopt_orphans() -> None:
    """Make this child the subreaper of what its jobs start (Linux 3.4+): a process whose
    parent exits (`setsid cmd &`, a daemon's double fork) comes back to this child instead of
    init, so it stays in the attempt's tree, and the hard timeout, the memory cap and a hard
    stop kill it with the rest (process_tree.tree follows parents)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def reap_orphans() -> None:
    """Reap the adopted processes that ended (a subreaper must, or they stay zombies). One
    peek (WNOWAIT) when there is none, the usual case: the hot path pays one system call."""
    if not hasattr(os, "waitid"):  # pragma: no cover - no subreaper there either
        return
    while True:
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # no child at all
            return
        if ended is None or ended.si_pid == 0:
            return
        try:
            os.waitpid(ended.si_pid, 0)
        except ChildProcessError:  # reaped meanwhile (a job's own Popen, on another thread)
            continue


class Child:
    def __init__(self, config: dict[str, Any], outbox: IO[bytes]) -> None:
        self.app = load_app(config["app"])
        if self.app.url != config["url"]:
            self.app.use_url(config["url"], config["url_source"])
        self.outbox = outbox
        self.ref = WorkerRef(id=config["worker"], host=config["host"], pid=config["parent"])
        self.queues: tuple[str, ...] = tuple(config["queues"])
        self.weights: tuple[int, ...] = tuple(config["weights"])
        self.rng = random.Random()
        self.memory_mb: float | None = config["memory_mb"]
        self.where = f"{config['app']} on worker {self.ref.id}"
        # the sync jobs' definitions by name, looked up once each (_runs_here)
        self.sync_jobs: dict[str, Job[..., Any]] = {}
        self.pulse = Pulse.attach(config["pulse_fd"])
        self.slot = messages.AttemptSlot.attach(config["slot_fd"])
        log_fd = _log_descriptor()
        self.spool = LogSpool.attach(config["spool_fd"], log_fd)
        if log_fd is not None:
            spool_lines(self.spool)  # a no-op unless tenure's JSON handler writes the log
        self.ends: list[list[Any]] = []  # the Tally still to send
        self.ends_bytes = 0
        self.ends_since = 0.0  # monotonic time of the oldest end in it
        self.reaped_at = 0.0  # monotonic time orphans were last reaped (reap_orphans)
        self._said = threading.Lock()  # the pipe and the Tally: the job's and the flusher's
        flusher = threading.Thread(target=self._flush_loop, name="tenure-flush", daemon=True)
        flusher.start()
        _State.mark = CancelMark.attach(config["cancel_fd"])
        self.store = self.app.store
        self.app.hooks.run_child_start()  # @app.on_child_start: once, before any attempt
        self.lease: float = config["lease"]
        self.recorder = Recorder(
            self.store,
            self.ref,
            lease=config["lease"],
            interrupt=threading.Event(),  # the supervisor kills the child; nothing else stops it
            refused=lambda exc: log.error("the store refused the worker's child: %s", exc),
        )

    def serve(self, inbox: IO[bytes]) -> None:
        self._send(messages.Ready(os.getpid()))
        for line in inbox:
            for order in messages.decode(line):  # Garbled: the child ends, its attempt crashed
                if not isinstance(order, messages.Run):
                    raise messages.Garbled(f"a child runs attempts, not {order!r}")
                if not self._run_chain(order.attempt, order.chain):
                    return

    def _run_chain(self, res: Reservation | None, chain: bool) -> bool:
        """Run attempts until the slot claims none; False when the child should leave."""
        job: Job[..., Any] | None = None  # res's definition, when already looked up
        while res is not None:
            res, job = self._run_one(res, chain, job)
        return not self._bloated()

    def _run_one(
        self, res: Reservation, chain: bool, job: Job[..., Any] | None
    ) -> tuple[Reservation | None, Job[..., Any] | None]:
        """Run `res` and record its end; the next attempt this child runs (claimed with the
        success) and its definition, or (None, None)."""
        started = time.monotonic()
        if log.isEnabledFor(logging.DEBUG):  # not even its fields built otherwise
            log.debug(
                "job %s %s attempt %d started",
                res.job_id,
                res.name,
                res.attempt,
                extra={"job_id": res.job_id, "job": res.name, "attempt": res.attempt},
            )
        ended = self._execute(res, job)
        claimed_at = time.monotonic()
        if ended.recorded is None and not self.pulse.fresh(claimed_at):
            self._idle(claimed_at)
            self._hand_over(res, ended, claimed_at - started)
            return None, None
        following = None
        if ended.to_record and chain and not _State.stopping and not self._bloated():
            result, following = self._succeed_and_claim(res, ended)
        else:
            result = self.recorder.end(res, ended)
        duration = claimed_at - started
        said: list[messages.Message] = []
        # The attempt claimed is named before it runs (a child that dies in it has said
        # which it was): in the slot, or down the pipe when it does not fit there.
        if following is not None:
            job = self.sync_jobs.get(following.name)
            if job is None:
                job = self._runs_here(following)
            if job is None:
                said.append(messages.HandOff(following))
                following = None
            elif not self.slot.hold(following, claimed_at):
                said.append(messages.Started.of(following, claimed_at))
        if following is None:
            job = None
            self._idle(claimed_at)
            self.slot.empty()
            said.append(messages.Idle(exit=self._bloated()))
        elif claimed_at - self.reaped_at >= REAP_S:
            reap_orphans()
            self.reaped_at = claimed_at
        log_end(res, ended, duration, result, self.ref.id)
        with self._said:
            if not self.ends:
                self.ends_since = claimed_at
            self.ends.append([res.name, ended.outcome, int(duration * 1e6)])
            self.ends_bytes += len(res.name) + 40
        if said or self.ends_bytes > TALLY_BYTES or self.spool.due(claimed_at):
            self._send(*said)
        return following, job

    def _idle(self, now: float) -> None:
        """This child holds no next attempt: its timer disarmed (a busy child arms it again
        for each job instead, SoftTimeout) and the orphans that ended reaped."""
        SoftTimeout.disarm()
        reap_orphans()
        self.reaped_at = now

    def _flush_loop(self) -> None:
        """Every FLUSH_S, what waited that long goes out, even while a long job runs."""
        while True:
            time.sleep(FLUSH_S)
            now = time.monotonic()
            if self.spool.due(now) or (self.ends and now - self.ends_since >= FLUSH_S):
                self._send()

    def _succeed_and_claim(
        self, res: Reservation, ended: Ended
    ) -> tuple[EndResult | None, Reservation | None]:
        """Record a success and claim the slot's next job in one store call: the hot path,
        straight to the store (Recorder.succeed_and_claim is the supervisor's)."""
        try:
            return self.store.end_attempt(
                # Ending(job_id=res.job_id, token=res.token, result=ended.result), without
                # the NamedTuple's Python __new__
                _NEW_TUPLE(Ending, (res.job_id, res.token, "succeeded", ended.result, *_SUCCESS)),
                # without weights the order is the queues' own (no call into settings)
                queues=weighted_order(self.queues, self.weights, self.rng)
                if self.weights
                else self.queues,
                worker=self.ref,
                lease=self.lease,
            )
        except Exception:
            # Recording the end matters; the next job can wait for the fetch loop (a success
            # recorded twice is refused by fencing, a job claimed by a lost reply is rescued).
            return self.recorder.end(res, ended), None

    def _hand_over(self, res: Reservation, ended: Ended, duration: float) -> None:
        """The supervisor is not watching (stopped?): it records this end when it can (a
        late one is fenced), and this child claims nothing until it hands out the next."""
        self._send(
            messages.ToRecord(
                res.job_id,
                res.token,
                res.name,
                ended.outcome,
                duration,
                ended.error,
                ended.traceback,
                ended.permanent,
                ended.result,  # a success is recorded with its result, or not at all
                ended.snooze,
                ended.cause,
            ),
            messages.Idle(),
        )

    def _execute(self, res: Reservation, job: Job[..., Any] | None) -> Ended:
        if job is None:
            found = definition(self.app, res, self.where)
            if isinstance(found, Ended):
                return found
            job = found
        _State.lease_ok = True
        _State.cancelled = False
        _State.attempt = (res.job_id, res.token)
        return execute(
            self.app,
            res,
            job,
            lease_ok=_State.is_lease_ok,
            cancelled=_State.is_cancelled,
            soft_timeout=True,
        )

    def _runs_here(self, res: Reservation) -> Job[..., Any] | None:
        """The definition of `res` when this child runs it (looked up once, for the run too,
        and kept for the next job of its name); None for an async job (the supervisor's
        event loop runs it) or one this code does not know (a rolling deploy's new job: the
        supervisor hands it back instead of failing it here)."""
        job = definition(self.app, res, self.where)
        if isinstance(job, Ended) or job.is_async:
            return None
        self.sync_jobs[res.name] = job
        return job

    def _bloated(self) -> bool:
        limit = self.memory_mb
        return limit is not None and rss_mb(os.getpid()) > limit * RECYCLE_SHARE

    def _send(self, *said: messages.Message) -> None:
        """Write the log lines gathered, then the Tally and `said` in one line: of less than
        PIPE_BUF bytes, one atomic write, so a kill cannot leave half of it."""
        with self._said:
            self.spool.flush()
            if self.ends:
                said = (messages.Tally(self.ends), *said)
                self.ends = []
                self.ends_bytes = 0
            if said:
                self.outbox.write(messages.encode(*said))
                self.outbox.flush()


def _log_descriptor() -> int | None:
    """Where the child's log goes (its stderr, the supervisor's), for the spool's writes."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def main() -> None:
    config = json.loads(sys.argv[1])
    die_with_parent(config["parent"])
    adopt_orphans()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _on_soft_timeout)
    signal.signal(LEASE_DANGER_SIGNAL, _on_lease_danger)
    signal.signal(STOP_CLAIMING_SIGNAL, _on_stop_claiming)
    signal.signal(CANCEL_SIGNAL, _on_cancel)
    setup_logging(config["log_level"])
    inbox_fd, outbox_fd = int(sys.argv[2]), int(sys.argv[3])
    with open(inbox_fd, "rb") as inbox, open(outbox_fd, "wb") as outbox:
        Child(config, outbox).serve(inbox)


if __name__ == "__main__":
    main()

"""One slot of a worker: a thread that watches the child process running the slot's sync
attempts (the child runs and records them itself, see child.py), or runs an async attempt on
the worker's event loop (see async_attempt.py; what a slot needs of its worker: slot_host.py).
The watchdog's part: the clocks of each attempt the child names in its attempt slot (hard
timeout, memory cap, a lost lease, a hard stop, a cancel) and, when the child dies or is
killed, the end of the attempt it held, recorded at once. The slot is read on the watch's tick
(POLL_S), when a message comes, before a kill and after a death.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from tenure.core import causes
from tenure.core.records import Reservation
from tenure.job import Job
from tenure.logs import job_fields
from tenure.worker import messages
from tenure.worker.async_attempt import run_async_attempt
from tenure.worker.child_process import ChildDied, ChildProcess
from tenure.worker.execute import Ended, arguments_of, definition, error_text
from tenure.worker.process_tree import memory_note
from tenure.worker.slot_host import SlotHost

# The cause of an attempt the worker itself stopped, by the outcome it records (_problem and
# _memory_overrun: a memory overrun is the one 'crashed' the worker decides).
WORKER_KILLS = {
    "lost_lease": causes.LOST_LEASE,
    "interrupted": causes.HARD_STOP,
    "cancelled": causes.CANCEL,
    "timed_out": causes.TIMEOUT,
    "crashed": causes.MEMORY_CAP,
}

log = logging.getLogger("tenure.worker")

POLL_S = 0.05
MEMORY_CHECK_S = 0.5
# A renewal that says an attempt is gone may have raced the child's own end of it (recorded,
# its message not written yet): the watchdog waits this long for that message before it kills.
LOST_LEASE_CONFIRM_S = 0.05


class Slot:
    def __init__(self, worker: SlotHost[Slot], index: int) -> None:
        self.worker = worker
        self.index = index
        self.inbox: queue.Queue[Reservation | None] = queue.Queue()
        self.child: ChildProcess | None = None
        self.current: Reservation | None = None
        self.started_at = 0.0  # monotonic time the current attempt started
        self.renewed_at = 0.0  # monotonic time the current lease was last known renewed
        self.lease_warned = False
        self._lease_lost: tuple[Reservation, str] | None = None
        self._cancel: Reservation | None = None  # cancelled while it runs: stop it
        self._cancel_sent_at: float | None = None  # monotonic time of the soft stop
        # the current attempt's last memory reading: (MB, monotonic time), the evidence a
        # crash is recorded with (an OOM kill at about this much)
        self.memory: tuple[float, float] | None = None
        self._seen = 0  # the sequence of the child's attempt slot last read
        self.thread = threading.Thread(target=self._loop, name=f"tenure-slot-{index}", daemon=True)

    # -- called from other threads ------------------------------------------------------
    def assign(self, reservation: Reservation, reserved_at: float) -> None:
        self.assign_current(reservation, reserved_at)
        self.inbox.put(reservation)

    def assign_current(self, reservation: Reservation, at: float) -> None:
        """Make `reservation` the attempt this slot's lease checks and clocks watch."""
        self.current = reservation
        self.started_at = at
        self.renewed_at = at
        self.lease_warned = False
        self._lease_lost = None
        self._cancel = None
        self._cancel_sent_at = None
        self.memory = None

    def cancel(self, reservation: Reservation) -> None:
        """Someone cancelled the job of `reservation`: the slot stops the attempt, with the
        soft signal first and a kill `kill_after` seconds later."""
        if self.current is reservation and self._cancel is None:
            self._cancel = reservation

    def lose_lease(self, reservation: Reservation, reason: str) -> None:
        """The lease of `reservation` is gone or about to be: the slot stops the attempt."""
        if self.current is reservation and self._lease_lost is None:
            self._lease_lost = (reservation, reason)

    def warn_lease(self) -> None:
        if not self.lease_warned and self.child is not None:
            self.child.warn_lease()
        self.lease_warned = True

    def lease_ok(self) -> bool:
        return self._lease_lost is None and not self.lease_warned

    def stop_claiming(self) -> None:
        """The worker is stopping: the child ends its current attempt and claims no other."""
        child = self.child
        if child is not None:
            child.stop_claiming()

    # -- the slot's own thread ----------------------------------------------------------
    def _loop(self) -> None:
        if self.worker.needs_children:
            self._start_child_quietly()
        while True:
            reservation = self.inbox.get()
            if reservation is None:
                break
            # A busy slot claims its next job as it records a success, so it runs job after
            # job without going back through the fetch loop.
            while reservation is not None:
                reservation = self._serve_guarded(reservation)
            self.current = None
            self.worker.slot_freed(self)
        if self.child is not None:
            self.child.stop()
            self.child = None

    def _serve_guarded(self, res: Reservation) -> Reservation | None:
        try:
            return self._serve(res)
        except Exception as exc:  # the slot must survive anything, or the worker shrinks
            log.exception("slot %d: unexpected error around job %s", self.index, res.job_id)
            self._discard_child()
            held = self.current or res
            self.current = None
            self.worker.report(
                held,
                Ended(
                    "failed",
                    f"tenure's worker failed around this attempt: {error_text(exc)}",
                    permanent=True,
                ),
                0.0,
            )
            return None

    def _serve(self, res: Reservation) -> Reservation | None:
        """Run `res` and what the slot claims after it; return an attempt still to run here."""
        known = self.worker.app.jobs.get(res.name)
        if known is not None and not known.is_async:
            return self._run_in_child(res)  # the child looks the job up and runs it
        job = definition(self.worker.app, res, self.worker.where)
        if isinstance(job, Ended):  # no job of that name here: a rolling deploy's new job?
            ended = self.worker.unknown_job(res)
            return self.worker.report(res, ended, 0.0, chain=ended.outcome != "deferred")
        if job.is_async:
            return self._run_async(res, job)
        return self._run_in_child(res)

    def _start_child_quietly(self) -> None:
        try:
            self.child_process()
        except ChildDied as exc:
            log.error("slot %d: %s", self.index, exc)

    def child_process(self) -> ChildProcess:
        # Started from this thread: Linux ties PDEATHSIG to the thread that forked the child.
        if self.child is not None and not self.child.alive():
            self.child.kill()  # it died while idle: nothing of a job ran in it
            self.child = None
        if self.child is None:
            self.child = ChildProcess(self.worker.child_config())
            self._seen = 0  # a new slot page
            self.child.wait_ready()
        return self.child

    def _discard_child(self) -> list[messages.Message]:
        """Kill the child; return what it wrote and was not read. `current` is then the
        attempt its slot named last, if that changed."""
        child, self.child = self.child, None
        if child is None:
            return []
        last = child.kill()
        self._sync(child)
        return last

    def _sync(self, child: ChildProcess) -> None:
        """Make the attempt the child's slot names the current one, if the slot changed since
        it was last read (the child recorded the last one's end and claimed this one, or none).
        Read before the messages of the same look: the child writes the slot first."""
        held = child.held()
        if held is None or held[0] == self._seen:
            return
        self._seen, started = held
        if started is None:
            self.current = None
        else:
            self.assign_current(started.reservation(), started.claimed_at)
            self.worker.count_start()

    # -- sync attempts: watching the child ------------------------------------------------
    def _run_in_child(self, res: Reservation) -> Reservation | None:
        chain = self.worker.may_chain()
        try:
            child = self.child_process()
        except (ChildDied, OSError) as exc:
            return self._not_taken(res, exc)
        return self.watch(child, messages.Run(res, chain), res)

    def _not_taken(self, res: Reservation, exc: Exception) -> Reservation | None:
        """The child could not take the attempt: it crashed, and the slot runs nothing more."""
        self._discard_child()
        self.current = None
        self.worker.report(
            res, Ended("crashed", f"the child process could not take the attempt: {exc}"), 0
        )
        return None

    def watch(
        self,
        child: ChildProcess,
        order: messages.Run | None = None,
        res: Reservation | None = None,
    ) -> Reservation | None:
        """Send the child `order` (an attempt of `res` to run), if any, then follow it until it
        is idle, dies or is killed; return an async attempt it claimed and handed over (run by
        this slot on the event loop), if any."""
        if order is not None and res is not None:
            try:
                # encoded here, not by send(): the watch's one stay in messages.py before
                # the child answers (bench walk counts each change of module)
                child.send(messages.encode(order))
            except (ChildDied, OSError) as exc:
                return self._not_taken(res, exc)
            self.started_at = time.monotonic()
        next_memory_check = time.monotonic() + MEMORY_CHECK_S
        handoff: Reservation | None = None
        while True:
            try:
                said = child.receive(POLL_S)
            except ChildDied as exc:
                self._child_died(str(exc), exc.cause)
                return None
            except messages.Garbled as exc:
                self._child_garbled(child, exc)
                return None
            self._sync(child)
            if said is not None:
                for message in said:
                    if isinstance(message, messages.Idle):
                        if message.exit:
                            child.stop()
                            self.child = None
                        return handoff
                    handoff = self.take(message) or handoff
            now = time.monotonic()
            self._soft_cancel(child, now)
            problem = self._problem(now)
            if now >= next_memory_check and problem is None:
                next_memory_check = now + MEMORY_CHECK_S
                problem = self._memory_overrun(child, now)
            if problem is not None and self._stop_attempt(child, *problem):
                return None

    def take(self, message: messages.Message) -> Reservation | None:
        """Follow one message of the child; return the attempt it handed over, if any."""
        if isinstance(message, messages.Tally):
            for name, outcome, micros in message.ends:
                self.worker.attempt_recorded(name, outcome, micros / 1e6)
        elif isinstance(message, messages.Started):
            self.assign_current(message.reservation(), message.claimed_at)
            self.worker.count_start()
        elif isinstance(message, messages.HandOff):
            self.assign_current(message.attempt, time.monotonic())
            self.worker.count_start()
            return message.attempt
        elif isinstance(message, messages.ToRecord):  # its supervisor was not there: record it
            held = self._forget(message.job_id, message.token)
            if held is not None:
                m = message
                ended = Ended(
                    m.outcome, m.error, m.traceback, m.permanent, result=m.result,
                    snooze=m.snooze, cause=m.cause,
                )  # fmt: skip
                self.worker.report(held, ended, m.seconds)
        return None

    def _forget(self, job_id: str, token: int) -> Reservation | None:
        """The attempt (job_id, token) ended: no longer the one this slot watches."""
        held = self.current
        if held is not None and held.job_id == job_id and held.token == token:
            self.current = None
            return held
        return None

    def _problem(self, now: float) -> tuple[Reservation, str, str] | None:
        """Why the current attempt must stop now: (attempt, outcome, reason), or None."""
        res = self.current
        if res is None:
            return None
        lost = self._lease_lost
        if lost is not None and lost[0] is res:
            return res, "lost_lease", lost[1]
        if self.worker.hard_stop.is_set():
            return res, "interrupted", f"{self.worker.shutdown.hard_reason}; handed back"
        policy = res.policy
        sent = self._cancel_sent_at
        if self._cancel is res and sent is not None and now >= sent + policy.kill_after:
            return (
                res,
                "cancelled",
                f"job {res.name!r} was cancelled while it ran, kept running "
                f"{policy.kill_after:g} s after the cancel signal, and was killed",
            )
        if now >= self.started_at + policy.timeout + policy.kill_after:
            return (
                res,
                "timed_out",
                f"job {res.name!r} timed out after {policy.timeout:g} s, kept running "
                f"after JobTimeout and was killed at {policy.timeout + policy.kill_after:g} s",
            )
        return None

    def _soft_cancel(self, child: ChildProcess, now: float) -> None:
        """Send a cancelled attempt its soft stop, once (its clock to the kill starts here)."""
        res = self._cancel
        if res is None or res is not self.current or self._cancel_sent_at is not None:
            return
        self._cancel_sent_at = now
        log.info(
            "job %s attempt %d was cancelled: stopping it (killed in %g s if it keeps going)",
            res.job_id,
            res.attempt,
            res.policy.kill_after,
            extra=job_fields(res, outcome="cancelled"),
        )
        child.cancel(res.job_id, res.token)

    def _stop_attempt(
        self, child: ChildProcess, target: Reservation, outcome: str, why: str
    ) -> bool:
        """Kill the child for `target`, unless the child may have ended it meanwhile (then the
        watch reads what it wrote and looks again); True if killed."""
        if outcome in ("lost_lease", "timed_out", "cancelled"):
            wait = LOST_LEASE_CONFIRM_S if outcome == "lost_lease" else 0.0
            if child.has_message(wait):
                return False
            self._sync(child)
            if self.current is not target:  # the child ended it and went on meanwhile
                return False
        if outcome == "lost_lease":
            self.worker.metrics.lease_lost()
            log.warning(
                "job %s attempt %d: %s",
                target.job_id,
                target.attempt,
                why,
                extra=job_fields(target, outcome="lost_lease"),
            )
        for last in self._discard_child():  # what it wrote before the kill landed
            self.take(last)
        held, self.current = self.current, None
        if held is target:
            self._report(held, Ended(outcome, why, cause=WORKER_KILLS[outcome]))
        elif held is not None:
            self._report(
                held,
                Ended(
                    "interrupted",
                    f"the worker stopped its child process for job {target.job_id} ({why}) "
                    "just as this attempt began; handed back",
                ),
            )
        return True

    def _child_garbled(self, child: ChildProcess, exc: messages.Garbled) -> None:
        """The child wrote what is not a message: it is not trusted further. It is killed
        (what it wrote after that line is read), and the attempt it held crashed, to be
        retried by its policy."""
        log.error(
            "slot %d: child process (pid %d) wrote an unreadable line: %s",
            self.index,
            child.pid,
            exc,
        )
        for last in self._discard_child():
            self.take(last)
        held, self.current = self.current, None
        if held is not None:
            why = (
                f"the worker killed its child process (pid {child.pid}), which wrote a line "
                f"the worker cannot read ({exc})"
            )
            self._report(held, Ended("crashed", why))

    def _child_died(self, why: str, cause: str | None) -> None:
        """The child died: the attempt it held crashed (its last messages are read)."""
        self._discard_child()  # what the job started dies with it
        held, self.current = self.current, None
        if held is not None:
            why += memory_note(self.memory, time.monotonic())
            if self.memory is not None:
                self.worker.keep_memory_reading(held, self.memory[0])
            self._report(held, Ended("crashed", why, cause=cause))

    def _report(self, res: Reservation, ended: Ended) -> None:
        self.worker.report(res, ended, time.monotonic() - self.started_at)

    def _memory_overrun(
        self, child: ChildProcess, now: float
    ) -> tuple[Reservation, str, str] | None:
        """Read the attempt's memory (kept as its last reading); past --memory, kill it."""
        limit = self.worker.options.memory_mb
        res = self.current
        if res is None:
            return None
        # Without a cap, the child's own memory (one file read): what an OOM kill is judged by.
        rss = child.tree_rss_mb() if limit is not None else child.rss_mb()
        if rss > 0:  # a child that just died (a zombie) reads 0: keep its last real reading
            self.memory = (rss, now)
        if limit is None or rss <= limit:
            return None
        return (
            res,
            "crashed",
            f"the child process (pid {child.pid}) and the processes it started used "
            f"{rss:.0f} MB, over the worker's --memory {limit:g} MB, and were killed",
        )

    # -- async attempts, on the worker's event loop ---------------------------------------
    def _interruption(self) -> Ended | None:
        if self._lease_lost is not None:
            self.worker.metrics.lease_lost()
            return Ended("lost_lease", self._lease_lost[1], cause=causes.LOST_LEASE)
        if self.worker.hard_stop.is_set():
            return Ended(
                "interrupted",
                f"{self.worker.shutdown.hard_reason}; handed back to the queue",
                cause=causes.HARD_STOP,
            )
        return None

    def _run_async(self, res: Reservation, job: Job[..., Any]) -> Reservation | None:
        started = time.monotonic()
        arguments = arguments_of(res, self.worker.app)
        if isinstance(arguments, Ended):
            return self.worker.report(res, arguments, 0.0, chain=True)
        ended = run_async_attempt(
            self.worker.app,
            self.worker.event_loop(),
            res,
            job,
            arguments,
            started=started,
            poll_s=POLL_S,
            lease_ok=self.lease_ok,
            cancelled=lambda: self._cancel is res,
            interruption=self._interruption,
        )
        claimed_at = time.monotonic()
        following = self.worker.report(res, ended, claimed_at - started, chain=True)
        if following is not None:
            self.assign_current(following, claimed_at)
        else:
            self.current = None
        return following

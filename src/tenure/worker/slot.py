"""One slot of a worker: a thread that runs attempts, each in its own recycled child process
(sync jobs) or on the worker's event loop (async jobs), and enforces the attempt's clocks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenure import payload, tracing
from tenure.context import JobContext, activate, deactivate
from tenure.errors import PayloadError, UnknownJob
from tenure.job import Job
from tenure.logs import job_fields
from tenure.stores.base import EndResult, Reservation
from tenure.worker.child_process import ChildDied, ChildProcess

if TYPE_CHECKING:
    from tenure.worker.supervisor import Worker

log = logging.getLogger("tenure.worker")

POLL_S = 0.05
MEMORY_CHECK_S = 0.5


@dataclass(frozen=True)
class Ended:
    """How an attempt ended, as the store will record it."""

    outcome: str
    error: str | None = None
    traceback: str | None = None
    permanent: bool = False
    # set when the child already recorded the end (a transactional job's own commit)
    recorded: EndResult | None = None


class Slot:
    def __init__(self, worker: Worker, index: int) -> None:
        self.worker = worker
        self.index = index
        self.inbox: queue.Queue[Reservation | None] = queue.Queue()
        self.child: ChildProcess | None = None
        self.current: Reservation | None = None
        self.renewed_at = 0.0  # monotonic time the current lease was last known renewed
        self.lease_warned = False
        self._lease_lost: str | None = None
        self.thread = threading.Thread(target=self._loop, name=f"tenure-slot-{index}", daemon=True)

    # -- called from other threads ------------------------------------------------------
    def assign(self, reservation: Reservation, reserved_at: float) -> None:
        self.assign_current(reservation, reserved_at)
        self.inbox.put(reservation)

    def assign_current(self, reservation: Reservation, reserved_at: float) -> None:
        """Make `reservation` the attempt this slot's lease checks watch."""
        self.current = reservation
        self.renewed_at = reserved_at
        self.lease_warned = False
        self._lease_lost = None

    def lose_lease(self, reservation: Reservation, reason: str) -> None:
        if self.current is reservation and self._lease_lost is None:
            self._lease_lost = reason
            self.worker.metrics.lease_lost()
            log.warning(
                "job %s attempt %d: %s",
                reservation.job_id,
                reservation.attempt,
                reason,
                extra=job_fields(reservation, outcome="lost_lease"),
            )

    def warn_lease(self) -> None:
        if not self.lease_warned and self.child is not None:
            self.child.warn_lease()
        self.lease_warned = True

    def lease_ok(self) -> bool:
        return self._lease_lost is None and not self.lease_warned

    # -- the slot's own thread ----------------------------------------------------------
    def _loop(self) -> None:
        if self.worker.needs_children:
            self._start_child_quietly()
        while True:
            reservation = self.inbox.get()
            if reservation is None:
                break
            # A busy slot claims its next job as it records a success, so it runs job after
            # job without going back through the fetch loop (see Worker.report).
            while reservation is not None:
                reservation = self._execute_guarded(reservation)
            self.current = None
            self.worker.slot_freed(self)
        if self.child is not None:
            self.child.stop()
            self.child = None

    def _execute_guarded(self, reservation: Reservation) -> Reservation | None:
        try:
            return self._execute(reservation)
        except Exception as exc:  # the slot must survive anything, or the worker shrinks
            log.exception("slot %d: unexpected error around job %s", self.index, reservation.job_id)
            self._end_after_worker_error(reservation, exc)
            return None

    def _end_after_worker_error(self, res: Reservation, exc: Exception) -> None:
        """Close the attempt rather than leave it open until its lease expires."""
        self._discard_child()
        try:
            self.worker.report(
                res,
                Ended(
                    "failed",
                    f"tenure's worker failed around this attempt: {type(exc).__name__}: {exc}",
                    permanent=True,
                ),
                0.0,
            )
        except Exception:
            log.exception("slot %d: could not record the end of job %s", self.index, res.job_id)

    def _start_child_quietly(self) -> None:
        try:
            self._child()
        except ChildDied as exc:
            log.error("slot %d: %s", self.index, exc)

    def _child(self) -> ChildProcess:
        # Started from this thread: Linux ties PDEATHSIG to the thread that forked the child.
        if self.child is None:
            self.child = ChildProcess(self.worker.options.app_spec)
            self.child.wait_ready()
        return self.child

    def _execute(self, res: Reservation) -> Reservation | None:
        """Run one attempt and record its end; return the next job this slot claimed."""
        started = time.monotonic()
        log.debug(
            "job %s %s attempt %d started",
            res.job_id,
            res.name,
            res.attempt,
            extra=job_fields(res, worker=self.worker.ref.id),
        )
        ended = self._run(res, started)
        claimed_at = time.monotonic()
        following = self.worker.report(res, ended, claimed_at - started, chain=True)
        if following is not None:
            self.assign_current(following, claimed_at)
        return following

    def _run(self, res: Reservation, started: float) -> Ended:
        worker = self.worker
        try:
            job = worker.app.get_definition(res.name)
        except UnknownJob:
            return Ended(
                "failed",
                f"unknown job {res.name!r}: no job of that name is registered in "
                f"{worker.options.app_spec} on worker {worker.ref.id}; deploy the code that "
                f"defines it, then run `tenure failed retry {res.job_id}`",
                permanent=True,
            )
        if not job.is_async:
            # the child decodes the payload itself and reports a corrupt one as permanent
            return self._run_in_child(res, job, started)
        try:
            arguments = payload.decode(res.payload)
        except PayloadError as exc:
            return Ended("failed", f"corrupt payload: {exc}", permanent=True)
        return self._run_async(res, job, arguments, started)

    def _interruption(self) -> Ended | None:
        if self._lease_lost is not None:
            return Ended("lost_lease", self._lease_lost)
        if self.worker.hard_stop.is_set():
            return Ended(
                "interrupted", f"{self.worker.shutdown.hard_reason}; handed back to the queue"
            )
        return None

    def _run_in_child(self, res: Reservation, job: Job, started: float) -> Ended:
        try:
            child = self._child()
            child.send(
                {
                    "job_id": res.job_id,
                    "name": res.name,
                    "queue": res.queue,
                    "payload": res.payload,
                    "attempt": res.attempt,
                    "batch_id": res.batch_id,
                    "token": res.token,
                }
            )
        except (ChildDied, OSError) as exc:
            self._discard_child()
            return Ended("crashed", f"the child process could not take the attempt: {exc}")
        if self.lease_warned:
            child.warn_lease()
        policy = res.policy
        soft_at = started + policy.timeout
        hard_at = soft_at + policy.kill_after
        soft_sent = False
        next_memory_check = started + MEMORY_CHECK_S
        while True:
            try:
                answer = child.receive(POLL_S)
            except ChildDied as exc:
                self._discard_child()  # what the job started dies with it
                return Ended("crashed", str(exc))
            if answer is not None:
                ended = self._translate(res, answer)
                self._recycle_if_bloated()
                return ended
            now = time.monotonic()
            stop = self._interruption()
            if stop is not None:
                self._discard_child()
                return stop
            if not soft_sent and now >= soft_at:
                child.soft_timeout()
                soft_sent = True
            if now >= hard_at:
                self._discard_child()
                return Ended(
                    "timed_out",
                    f"job {res.name!r} timed out after {policy.timeout:g} s, kept running "
                    f"after JobTimeout and was killed at {policy.timeout + policy.kill_after:g} s",
                )
            if now >= next_memory_check:
                next_memory_check = now + MEMORY_CHECK_S
                over = self._memory_overrun(child)
                if over:
                    self._discard_child()
                    return Ended("crashed", over)

    def _translate(self, res: Reservation, answer: dict[str, Any]) -> Ended:
        if answer.get("status") == "ok":
            if answer.get("completed"):
                recorded = EndResult(bool(answer.get("accepted")), str(answer.get("state")))
                return Ended("succeeded", recorded=recorded)
            return Ended("succeeded")
        kind = answer.get("kind")
        if kind == "timeout":
            return Ended(
                "timed_out",
                f"job {res.name!r} timed out after {res.policy.timeout:g} s "
                f"(attempt {res.attempt})",
                answer.get("traceback"),
            )
        if kind == "permanent":
            return Ended("failed", answer.get("error"), permanent=True)
        return Ended("failed", answer.get("error"), answer.get("traceback"))

    def _memory_overrun(self, child: ChildProcess) -> str | None:
        limit = self.worker.options.memory_mb
        if limit is None:
            return None
        rss = child.tree_rss_mb()
        if rss <= limit:
            return None
        return (
            f"the child process (pid {child.pid}) and the processes it started used "
            f"{rss:.0f} MB, over the worker's --memory {limit:g} MB, and were killed"
        )

    def _recycle_if_bloated(self) -> None:
        limit = self.worker.options.memory_mb
        if self.child is not None and limit is not None and self.child.rss_mb() > limit * 0.8:
            # Between jobs, a child near its cap is replaced before it is killed mid-job.
            self.child.stop()
            self.child = None

    def _discard_child(self) -> None:
        if self.child is not None:
            self.child.kill()
            self.child = None

    def _run_async(
        self, res: Reservation, job: Job, arguments: payload.Arguments, started: float
    ) -> Ended:
        loop = self.worker.event_loop()
        ctx = JobContext(
            res.job_id,
            res.name,
            res.queue,
            res.attempt,
            res.batch_id,
            res.token,
            _app=self.worker.app,
            _lease_ok=self.lease_ok,
        )
        future = asyncio.run_coroutine_threadsafe(
            _run_coroutine(job, arguments, ctx, res.policy.timeout), loop
        )
        hard_at = started + res.policy.timeout + res.policy.kill_after
        while True:
            done, _ = concurrent.futures.wait([future], timeout=POLL_S)
            if done:
                return _async_result(res, future)
            stop = self._interruption()
            if stop is not None or time.monotonic() >= hard_at:
                future.cancel()
                return stop or Ended(
                    "timed_out",
                    f"async job {res.name!r} did not end at its {res.policy.timeout:g} s "
                    "timeout and was abandoned: it swallows CancelledError or blocks the event "
                    "loop (time.sleep, requests...; an async job cannot be killed)",
                )


async def _run_coroutine(
    job: Job, arguments: payload.Arguments, ctx: JobContext, timeout: float
) -> tuple[str, float]:
    """How the job ended ("ok", "timed_out" or "overran") and how long it ran."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    token = activate(ctx)
    # the attempt's span (a no-op unless the app uses OpenTelemetry), linked to its dispatch;
    # started inside the task, so it is current in the job's own context only
    span = tracing.attempt_started(ctx, arguments.trace)
    try:
        async with asyncio.timeout(timeout) as scope:
            try:
                await job.fn(*arguments.args, **arguments.kwargs)
            except TimeoutError:
                if scope.expired():
                    raise
                raise _JobRaisedTimeout() from None
    except TimeoutError as exc:
        span.end("timed_out", exc)
        return "timed_out", loop.time() - began
    except _JobRaisedTimeout as exc:
        span.end("failed", exc.__context__ or exc)
        raise
    except BaseException as exc:
        span.end("failed", exc)
        raise
    finally:
        deactivate(token)
    ran = loop.time() - began
    if ran > timeout:
        # A blocking call held the event loop past the deadline, so asyncio.timeout never got
        # to cancel the job: it ran over its timeout all the same, and is recorded so.
        span.end("timed_out")
        return "overran", ran
    span.end("succeeded")
    return "ok", ran


class _JobRaisedTimeout(Exception):
    """The job raised its own TimeoutError (not tenure's timeout)."""


def _async_result(res: Reservation, future: concurrent.futures.Future[tuple[str, float]]) -> Ended:
    try:
        result, ran = future.result()
    except _JobRaisedTimeout as exc:
        cause = exc.__context__ or exc
        return Ended("failed", f"TimeoutError: {cause}", "".join(traceback.format_exception(cause)))
    except BaseException as exc:
        return Ended(
            "failed", f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))
        )
    if result == "timed_out":
        return Ended(
            "timed_out",
            f"job {res.name!r} timed out after {res.policy.timeout:g} s (attempt {res.attempt})",
        )
    if result == "overran":
        return Ended(
            "timed_out",
            f"async job {res.name!r} ran {ran:.2f} s, past its {res.policy.timeout:g} s timeout, "
            "without letting the event loop cancel it: a blocking call (time.sleep, requests, "
            "a sync driver) holds the loop; await an async equivalent or make it a sync job "
            f"(attempt {res.attempt})",
        )
    return Ended("succeeded")

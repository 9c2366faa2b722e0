"""Running one attempt, wherever it runs (a worker's child process, the worker's event loop,
`tenure.testing` in the test process): the job's context and span, and the one mapping from
how the job ended (returned, raised, timed out) to the outcome the store records.

Recording the outcome is the caller's: the child records its own, the supervisor records the
ends only it can see (a killed child, a hard timeout), the test helpers record theirs.
"""

from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tenure import tracing
from tenure.context import CURRENT, JobContext, activate, deactivate
from tenure.core import causes, chains, payload, results
from tenure.core.errors import (
    CancelRequested,
    DecryptionUnavailable,
    JobTimeout,
    JobTransactionEnded,
    PayloadError,
    Snooze,
)
from tenure.core.records import Ending, EndResult, Reservation
from tenure.core.results import ResultError
from tenure.hooks import Hooks
from tenure.job import Job


@dataclass(frozen=True)
class Ended:
    """How an attempt ended, as the store will record it."""

    outcome: str
    error: str | None = None
    traceback: str | None = None
    permanent: bool = False
    # set when the attempt's own transaction already recorded the end (a transactional job)
    recorded: EndResult | None = None
    # a success's stored result (tenure.core.results.encode), written with the success
    result: str | None = None
    # a `deferred` end the job asked for (tenure.Snooze): queued again this many seconds later
    snooze: float = 0.0
    cause: str | None = None  # who ended the attempt's process (tenure.core.causes)
    # False: its worker already recorded this end once (a repeated hand-back of a job it does
    # not know): the store keeps no attempt for it (Store.end_attempt's `record`)
    history: bool = True

    @property
    def to_record(self) -> bool:
        """A success still to be written by the caller (not by the job's own transaction)."""
        return self.outcome == "succeeded" and self.recorded is None

    def ending(self, job_id: str, token: int) -> Ending:
        """This end of the attempt `job_id`/`token`, as Store.end_attempt takes it."""
        return Ending(
            job_id=job_id,
            token=token,
            outcome=self.outcome,
            result=self.result,
            error=self.error,
            traceback=self.traceback,
            permanent=self.permanent,
            cause=self.cause,
            snooze=self.snooze,
            record=self.history,
        )


SUCCEEDED = Ended("succeeded")


class SoftTimeout:
    """A worker child's soft timeout: SIGALRM armed for the attempt's timeout as the job's own
    code starts (execute's `soft_timeout`, written out there: no call around every attempt);
    `running` tells the child's handler whether the job's code runs (JobTimeout is raised
    only then).

    The end of the job's code only clears `running`: a busy child arms the timer again for
    its next attempt (setitimer replaces the old deadline), so one system call a job instead
    of two, and a signal that comes between two attempts is ignored by the handler. The
    child disarms (`disarm`) when it holds no next attempt, so an idle child is not woken."""

    running = False

    @classmethod
    def disarm(cls) -> None:
        cls.running = False
        signal.setitimer(signal.ITIMER_REAL, 0)


class _Untraced(tracing.Attempt):
    """An attempt in a process that does not use OpenTelemetry: nothing to end, and the
    attempt does not call into tenure.tracing at all."""

    def end(self, outcome: str, exc: BaseException | None = None) -> None:
        pass


UNTRACED = _Untraced()


def attempt_span(ctx: JobContext, carrier: dict[str, str] | None) -> tracing.Attempt:
    """The attempt's span (see tenure.tracing), linked to its dispatch; none at all unless
    the process uses OpenTelemetry."""
    if tracing.API not in sys.modules:
        return UNTRACED
    return tracing.attempt_started(ctx, carrier)


def definition(app: Any, res: Reservation, where: str) -> Job[..., Any] | Ended:
    """The job's definition, or the permanent failure of a job no code here defines."""
    job: Job[..., Any] | None = app.jobs.get(res.name)
    if job is None:
        return Ended(
            "failed",
            f"unknown job {res.name!r}: no job of that name is registered in {where}; deploy "
            f"the code that defines it, then run `tenure failed retry {res.job_id}`",
            permanent=True,
            cause=causes.UNKNOWN_JOB,
        )
    return job


def context(
    app: Any,
    res: Reservation,
    job: Job[..., Any],
    lease_ok: Callable[[], bool],
    cancelled: Callable[[], bool] = lambda: False,
) -> JobContext:
    return JobContext(
        res.job_id,
        res.name,
        res.queue,
        res.attempt,
        res.batch_id,
        res.token,
        _app=app,
        _lease_ok=lease_ok,
        _cancelled=cancelled,
        _transactional=job.transactional,
    )


# how long a job whose payload this worker cannot decrypt waits before it is due again
UNREADABLE_HAND_BACK_S = 30.0


def arguments_of(res: Reservation, app: Any = None) -> payload.Arguments | Ended:
    try:
        arguments = payload.decode(res.payload)
    except DecryptionUnavailable as exc:
        # The payload is sound; this process cannot open it (no key, no package). Failing
        # it would blame the payload, and `failed retry` with the key runs it fine: hand it
        # back, no try used, due again a little later (at once, this worker would take it
        # again and again) for a worker that has what it takes.
        return Ended(
            "deferred",
            f"this worker cannot decrypt the payload of job {res.name!r}: {exc}; handed back, "
            f"due again in {UNREADABLE_HAND_BACK_S:g} s",
            snooze=UNREADABLE_HAND_BACK_S,
        )
    except PayloadError as exc:
        return Ended("failed", f"corrupt payload: {exc}", permanent=True)
    if arguments.passed_from is None or app is None:
        return arguments
    return passed_result(app, res.job_id, arguments)


def passed_result(app: Any, job_id: str, arguments: payload.Arguments) -> payload.Arguments | Ended:
    """A chain link with pass_result=True: the previous link's result becomes its first
    argument. The store copied it into this link's chain with the previous link's success
    (tenure.core.chains.step); a link stored before that was so reads the previous link itself."""
    own = app.find_job(job_id)
    copied, text = chains.passed_input(own.chain_text if own is not None else None)
    if copied:
        return replace(arguments, args=(results.decode(text), *arguments.args))
    previous = app.find_job(arguments.passed_from)
    if previous is None or previous.state != "succeeded":
        return Ended(
            "failed",
            f"its chain passes the result of link {arguments.passed_from}, which is no longer "
            "in the store (pruned by retention?)",
            permanent=True,
        )
    return replace(arguments, args=(previous.result, *arguments.args))


def execute(
    app: Any,
    res: Reservation,
    job: Job[..., Any],
    *,
    lease_ok: Callable[[], bool] = lambda: True,
    cancelled: Callable[[], bool] = lambda: False,
    soft_timeout: bool = False,
    run: Callable[[Any], Any] | None = None,
    catch: type[BaseException] = BaseException,
) -> Ended:
    """Run a sync job (or, with `run`, hand the coroutine a job returns to `run`) in this
    thread, and say how it ended. A transactional job's writes commit here with its success.

    `soft_timeout`: a worker child's SoftTimeout brackets the job's own code (the soft
    timeout may only interrupt that); exceptions outside `catch` propagate after the span is
    closed (Ctrl-C in a test run). Once per attempt on a busy worker: the calls it needs are
    written out (context, attempt_span, hooks_of, the timer)."""
    arguments = arguments_of(res, app)
    if isinstance(arguments, Ended):
        return arguments
    # context(...), its fields in order, by position (cheaper than by keyword)
    ctx = JobContext(
        res.job_id,
        res.name,
        res.queue,
        res.attempt,
        res.batch_id,
        res.token,
        app,
        lease_ok,
        cancelled,
        None,  # _transaction: none opened yet
        job.transactional,
    )
    token = CURRENT.set(ctx)  # activate(ctx), without a call out of this module
    # attempt_span: never raises (tracing swallows its errors)
    span = (
        UNTRACED
        if tracing.API not in sys.modules
        else tracing.attempt_started(ctx, arguments.trace)
    )
    hooks = getattr(app, "hooks", None)  # hooks_of(app)
    try:
        try:
            if soft_timeout:
                SoftTimeout.running = True
                signal.setitimer(signal.ITIMER_REAL, res.policy.timeout)
            value = None  # what a hook that swallowed the job's error leaves
            if isinstance(hooks, Hooks) and hooks.attempt:
                with hooks.around(ctx):
                    value = _call(job, arguments, run)
            else:  # the usual case: no hook, no context manager entered
                value = _call(job, arguments, run)
        finally:
            # a soft timeout landing here, after the job returned, is still the job's
            if soft_timeout:
                SoftTimeout.running = False
    except JobTimeout as exc:
        _abandon(ctx)
        span.end("timed_out", exc)
        return timed_out(res, traceback.format_exc())
    except CancelRequested as exc:
        _abandon(ctx)
        span.end("cancelled", exc)
        return Ended(
            "cancelled",
            f"job {res.name!r} was cancelled while it ran and stopped at the cancel signal "
            f"(attempt {res.attempt})",
            traceback.format_exc(),
            cause=causes.CANCEL,
        )
    except BaseException as exc:  # the job's own error, whatever it is, ends only this attempt
        _abandon(ctx)
        span.end("failed", exc)
        if not isinstance(exc, catch):
            raise
        return raised(exc)
    finally:
        CURRENT.reset(token)
    if value is None and ctx._transaction is None and span is UNTRACED:
        return SUCCEEDED  # the common end, without the calls that would say so
    stored = stored_result(app, job, value)
    if isinstance(stored, Ended):
        _abandon(ctx)
        span.end("failed")
        return stored
    ended = _finish_transaction(ctx, stored)
    span.end(_span_outcome(ended))
    return ended


def _call(
    job: Job[..., Any], arguments: payload.Arguments, run: Callable[[Any], Any] | None
) -> Any:
    """The job's function called (and a coroutine it returns run by `run`)."""
    value = job.fn(*arguments.args, **arguments.kwargs)
    if run is not None and _coroutine(value):
        value = run(value)
    return value


def _coroutine(value: Any) -> bool:
    """asyncio.iscoroutine, for the callers that run coroutines (asyncio is loaded there): a
    worker's child, which runs none, never imports asyncio."""
    import asyncio

    return asyncio.iscoroutine(value)


def stored_result(app: Any, job: Job[..., Any], value: Any) -> str | Ended | None:
    """The text to store for a return value, or the attempt's failure when it cannot be
    stored (not JSON, over the size limit): permanent, since running the job again would
    only return it again, and a cut value is never stored."""
    if value is None:
        return None
    try:
        return results.encode(
            job.name, value, max_bytes=app.max_payload_bytes, encrypted=job.encrypted
        )
    except ResultError as exc:
        return Ended("failed", str(exc), permanent=True)


def succeeded(result: str | None) -> Ended:
    return SUCCEEDED if result is None else Ended("succeeded", result=result)


NO_HOOKS = Hooks()


def hooks_of(app: Any) -> Hooks:
    """The app's hooks (an app-like object without them: none)."""
    found = getattr(app, "hooks", None)
    return found if isinstance(found, Hooks) else NO_HOOKS


def raised(exc: BaseException) -> Ended:
    if isinstance(exc, Snooze):  # the job put itself off: no try used, no failure
        return Ended(
            "deferred", f"the job snoozed itself for {exc.seconds:g} s", snooze=exc.seconds
        )
    return Ended("failed", error_text(exc), trace_text(exc), cause=causes.EXCEPTION)


def error_text(exc: BaseException) -> str:
    """'Type: text'. An exception whose str() raises must still fail only its attempt: had the
    error propagated, the child would die and the attempt be recorded as `crashed`."""
    name = type(exc).__name__
    try:
        return f"{name}: {exc}"
    except BaseException as unreadable:
        return f"{name}: (its text could not be read: str() raised {type(unreadable).__name__})"


def trace_text(exc: BaseException) -> str | None:
    try:
        return "".join(traceback.format_exception(exc))
    except BaseException:  # the traceback module's own str() of a hostile exception
        return None


def timed_out(res: Reservation, trace: str | None = None) -> Ended:
    return Ended(
        "timed_out",
        f"job {res.name!r} timed out after {res.policy.timeout:g} s (attempt {res.attempt})",
        trace,
        cause=causes.TIMEOUT,
    )


def _span_outcome(ended: Ended) -> str:
    if ended.recorded is not None and not ended.recorded.accepted:
        return "lost_lease"
    return ended.outcome


def _finish_transaction(ctx: JobContext, result: str | None) -> Ended:
    """Commit the job's own writes with its completion (and result), in one commit."""
    if ctx._transaction is None:
        return succeeded(result)
    try:
        return Ended("succeeded", recorded=ctx._transaction.complete(result))
    except JobTransactionEnded as exc:
        # Part of its work may be committed already: running it again could do it twice, so
        # it fails for good and a person decides (`tenure failed retry`).
        return Ended("failed", str(exc), permanent=True)


def _abandon(ctx: JobContext) -> None:
    """Roll a transactional job's writes back: it did not succeed."""
    if ctx._transaction is not None:
        ctx._transaction.rollback()


# -- async jobs on the worker's event loop --------------------------------------------------
class _JobRaisedTimeout(Exception):
    """The job raised its own TimeoutError (not tenure's timeout)."""


async def run_coroutine(
    job: Job[..., Any], arguments: payload.Arguments, ctx: JobContext, res: Reservation
) -> Ended:
    """Run an async job under its timeout, inside the task, and say how it ended."""
    import asyncio  # loaded already (this runs on an event loop); a worker's child never pays it

    timeout = res.policy.timeout
    loop = asyncio.get_running_loop()
    began = loop.time()
    token = activate(ctx)
    # started inside the task, so the span is current in the job's own context only
    span = attempt_span(ctx, arguments.trace)
    try:
        async with asyncio.timeout(timeout) as scope:
            try:
                value = None  # what a hook that swallowed the job's error leaves
                with hooks_of(ctx._app).around(ctx):
                    value = await job.fn(*arguments.args, **arguments.kwargs)
            except TimeoutError:
                if scope.expired():
                    raise
                raise _JobRaisedTimeout() from None
    except TimeoutError as exc:
        span.end("timed_out", exc)
        return timed_out(res)
    except _JobRaisedTimeout as exc:
        cause = exc.__context__ or exc
        span.end("failed", cause)
        return Ended("failed", error_text(cause), trace_text(cause), cause=causes.EXCEPTION)
    except Exception as exc:
        span.end("failed", exc)
        return raised(exc)
    except BaseException as exc:  # cancelled: the slot gave up on it
        span.end("failed", exc)
        raise
    finally:
        deactivate(token)
    ran = loop.time() - began
    if ran > timeout:
        # A blocking call held the event loop past the deadline, so asyncio.timeout never got
        # to cancel the job: it ran over its timeout all the same, and is recorded so.
        span.end("timed_out")
        return Ended(
            "timed_out",
            f"async job {res.name!r} ran {ran:.2f} s, past its {timeout:g} s timeout, "
            "without letting the event loop cancel it: a blocking call (time.sleep, requests, "
            "a sync driver) holds the loop; await an async equivalent or make it a sync job "
            f"(attempt {res.attempt})",
            cause=causes.TIMEOUT,
        )
    stored = stored_result(ctx._app, job, value)
    if isinstance(stored, Ended):
        span.end("failed")
        return stored
    span.end("succeeded")
    return succeeded(stored)

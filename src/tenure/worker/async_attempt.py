"""One async attempt, run on the worker's event loop until it ends, is stopped (a cancel, a
lost lease, a hard stop) or outlives its hard timeout. An async job cannot be killed: a stop
cancels its coroutine, and one that keeps going is abandoned. The slot that runs it keeps the
attempt's bookkeeping (its report and the next attempt it claims), see slot.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable
from typing import Any

from tenure.app import App
from tenure.core import causes
from tenure.core.payload import Arguments
from tenure.core.records import Reservation
from tenure.job import Job
from tenure.worker.execute import Ended, context, error_text, run_coroutine


def run_async_attempt(
    app: App,
    loop: asyncio.AbstractEventLoop,
    res: Reservation,
    job: Job[..., Any],
    arguments: Arguments,
    *,
    started: float,
    poll_s: float,
    lease_ok: Callable[[], bool],
    cancelled: Callable[[], bool],
    interruption: Callable[[], Ended | None],
) -> Ended:
    """Run the attempt `res` of `job` on `loop`, looking every `poll_s` at its stops
    (`interruption`, `cancelled`) and at its hard timeout, counted from `started`
    (monotonic); return how it ended."""
    ctx = context(app, res, job, lease_ok, cancelled)
    future = asyncio.run_coroutine_threadsafe(run_coroutine(job, arguments, ctx, res), loop)
    hard_at = started + res.policy.timeout + res.policy.kill_after
    while True:
        done, _ = concurrent.futures.wait([future], timeout=poll_s)
        if done:
            return _async_result(future)
        stop = interruption()
        if stop is None and cancelled():
            stop = Ended(
                "cancelled",
                f"async job {res.name!r} was cancelled while it ran; CancelledError was "
                "raised inside it",
                cause=causes.CANCEL,
            )
        if stop is not None or time.monotonic() >= hard_at:
            future.cancel()
            return stop or Ended(
                "timed_out",
                f"async job {res.name!r} did not end at its {res.policy.timeout:g} s "
                "timeout and was abandoned: it swallows CancelledError or blocks the event "
                "loop (time.sleep, requests...; an async job cannot be killed)",
                cause=causes.TIMEOUT,
            )


def _async_result(future: concurrent.futures.Future[Ended]) -> Ended:
    try:
        return future.result()
    except BaseException as exc:  # cancelled, or an error outside the job's own code
        return Ended("failed", error_text(exc))

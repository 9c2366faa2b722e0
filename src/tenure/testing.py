"""Helpers for your own tests: run jobs in the test process, assert what was dispatched, and
step a frozen clock through delays, backoff and leases.

Jobs still go through the real store and the real JSON payload round-trip, so arguments that
would fail in production fail in tests too. Timeouts are not enforced in the test process.

    from tenure.testing import assert_dispatched, drain, freeze

    def test_checkout(tenure_app):                # the pytest fixture: a fresh SQLite store
        checkout(order_id=42)                     # your code dispatches send_invoice(42)
        assert_dispatched(send_invoice, args=(42,))
        clock = freeze(tenure_app)
        done = drain(tenure_app)                  # runs it here, now, through the store
        assert [j.state for j in done] == ["succeeded"]
        clock.advance(30)                         # past a 30 s delay or backoff
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tenure.app import App
from tenure.core import causes, payload
from tenure.core.errors import ConfigError
from tenure.core.records import JobRecord, Reservation, WorkerRef
from tenure.job import Job, JobsApp
from tenure.stores.base import get_job
from tenure.stores.sqlite import SQLiteStore
from tenure.worker.execute import Ended, definition, execute

INLINE_WORKER = WorkerRef(id="w-inline", host=socket.gethostname(), pid=os.getpid())
DRAIN_LEASE_S = 3600.0


@contextmanager
def isolate(app: App, directory: str | Path) -> Iterator[App]:
    """Point an existing app at a fresh SQLite store in `directory` for the duration."""
    saved = app.url, app.url_source, app._store
    app.url = f"sqlite:///{Path(directory).resolve() / 'tenure-test.db'}"
    app.url_source = "tenure.testing.isolate"
    app._store = None
    try:
        yield app
    finally:
        app.close()
        app.url, app.url_source, app._store = saved


def drain(app: App, *, queues: list[str] | None = None, max_jobs: int = 10_000) -> list[JobRecord]:
    """Run every ready job in this process until none is left; return them as they ended."""
    names = queues or sorted({j.queue for j in app.jobs.values()} | _stored_queues(app))
    ended: list[JobRecord] = []
    while len(ended) < max_jobs:
        batch = app.store.reserve(queues=names, worker=INLINE_WORKER, lease=DRAIN_LEASE_S, limit=1)
        if not batch:
            break
        res = batch[0]
        _run_here(app, res)
        record = get_job(app.store, res.job_id)
        if record is not None:
            ended.append(record)
    return ended


@contextmanager
def inline(app: App) -> Iterator[App]:
    """While active, every dispatch runs at once in this process (through the store)."""
    previous = app.after_dispatch

    def run_now() -> None:
        drain(app)

    app.after_dispatch = run_now
    try:
        yield app
    finally:
        app.after_dispatch = previous


class FrozenClock:
    """The store's clock, stopped; `advance()` moves it."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def freeze(app: App, at: float | None = None) -> FrozenClock:
    """Freeze the app's store clock (SQLite only) at `at`, default the real now."""
    store = app.store
    if not isinstance(store, SQLiteStore):
        raise ConfigError("freeze() works on the SQLite store; point the app at one (isolate())")
    clock = FrozenClock(store.now() if at is None else at)
    store.db.frozen = clock
    return clock


def dispatched(app: JobsApp, job: Job[..., Any]) -> list[payload.Arguments]:
    return [
        payload.decode(r.payload)
        for r in app.store.list_jobs(limit=1_000_000)
        if r.name == job.name
    ][::-1]


def assert_dispatched(
    job: Job[..., Any],
    *,
    args: tuple[Any, ...] | None = None,
    kwargs: dict[str, Any] | None = None,
    count: int | None = None,
) -> None:
    """The job was dispatched (with these arguments, if given; `count` times, if given)."""
    calls = dispatched(job.app, job)
    matching = [c for c in calls if _matches(c, args, kwargs)]
    if count is not None and len(matching) != count:
        raise AssertionError(
            f"expected {job.name} dispatched {count} time(s) with {_shown(args, kwargs)}, "
            f"found {len(matching)}; all dispatches: {_list(calls)}"
        )
    if not matching:
        raise AssertionError(
            f"expected {job.name} dispatched with {_shown(args, kwargs)}; "
            f"dispatches: {_list(calls)}"
        )


def assert_not_dispatched(
    job: Job[..., Any], *, args: tuple[Any, ...] | None = None, kwargs: dict[str, Any] | None = None
) -> None:
    matching = [c for c in dispatched(job.app, job) if _matches(c, args, kwargs)]
    if matching:
        raise AssertionError(f"{job.name} was dispatched with {_list(matching)}")


# -- inside --------------------------------------------------------------------------------
def _run_here(app: App, res: Reservation) -> None:
    """Run one attempt in this thread (an async job on its own event loop) and record it."""
    job = definition(app, res, "this test process")
    started = time.monotonic()
    if isinstance(job, Ended):
        ended = job
    else:
        # Exceptions that are not errors (Ctrl-C in the test run) stop the run, not the job.
        ended = execute(app, res, job, run=asyncio.run, catch=Exception)
    if ended.to_record and time.monotonic() - started > res.policy.timeout:
        # timeouts are not enforced here, but one that was overrun is recorded as on a worker
        ended = Ended(
            "timed_out",
            f"job {res.name!r} ran past its {res.policy.timeout:g} s timeout",
            cause=causes.TIMEOUT,
        )
    if ended.recorded is not None:
        return
    # with its cause, as a worker records it (tenure.worker.recording): the same history
    app.store.end_attempt(ended.ending(res.job_id, res.token))


def _stored_queues(app: App) -> set[str]:
    return {r.queue for r in app.store.list_jobs(state="queued", limit=10_000)}


def _matches(
    call: payload.Arguments, args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None
) -> bool:
    # JSON turns tuples into lists: compare through the same round trip
    if args is not None and call.args != payload.decode(payload.encode("", args, {})).args:
        return False
    return kwargs is None or call.kwargs == kwargs


def _shown(args: tuple[Any, ...] | None, kwargs: dict[str, Any] | None) -> str:
    if args is None and kwargs is None:
        return "any arguments"
    return f"args={args!r} kwargs={kwargs!r}"


def _list(calls: list[payload.Arguments]) -> str:
    return ", ".join(f"({c.args!r}, {c.kwargs!r})" for c in calls) or "none"

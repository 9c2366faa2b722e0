"""Waiting for a job's end (`JobHandle.wait`, `wait_async`): read the job, and between reads
sleep on the store's own wake-up for that job's end (`Store.wait_for_work(ended=...)`), never
a busy loop."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tenure.core.errors import ConfigError, JobCancelled, JobFailed
from tenure.core.states import FINAL_STATES

if TYPE_CHECKING:
    from tenure.core.records import JobRecord
    from tenure.stores.base import Store

# The longest one wait goes without reading the job again. The store wakes a waiter when the
# job succeeds or fails (PostgreSQL NOTIFY, a Redis list, SQLite's data_version); an end no
# wake-up announces (a cancel, a store behind a pooler without LISTEN) is seen this late.
WAIT_STEP_S = 0.5


class WaitingApp(Protocol):
    """What waiting uses of the App (tenure.job's JobsApp has it)."""

    @property
    def store(self) -> Store: ...

    def get_job(self, job_id: str) -> Any: ...


def wait(app: WaitingApp, job_id: str, timeout: float | None) -> Any:
    """The job's result once it succeeded; JobFailed / JobCancelled when it ended otherwise,
    TimeoutError when it had not ended within `timeout` s (None: no limit)."""
    deadline = _deadline(timeout)
    while True:
        step = _look(app.get_job(job_id), deadline, timeout)
        if isinstance(step, _Done):
            return step.value
        app.store.wait_for_work(queues=(), timeout=step, ended=(job_id,))


async def wait_async(app: WaitingApp, job_id: str, timeout: float | None) -> Any:
    """`wait` for asyncio callers: the store's calls run in a thread, a step at a time, so the
    event loop never blocks and cancelling the task ends the wait within one step."""
    import asyncio  # loaded already in any caller (a coroutine); a sync process never pays it

    deadline = _deadline(timeout)
    while True:
        step = _look(await asyncio.to_thread(app.get_job, job_id), deadline, timeout)
        if isinstance(step, _Done):
            return step.value
        await asyncio.to_thread(
            functools.partial(app.store.wait_for_work, queues=(), timeout=step, ended=(job_id,))
        )


def wait_chain(app: WaitingApp, link_ids: list[str], timeout: float | None) -> Any:
    """A chain's end: each link in turn (the next exists once the previous succeeded: the
    store dispatches it with that success), raising for the one that stopped the chain."""
    deadline = _deadline(timeout)
    value: Any = None
    for link_id in link_ids:
        value = wait(app, link_id, _left(deadline))
    return value


async def wait_chain_async(app: WaitingApp, link_ids: list[str], timeout: float | None) -> Any:
    deadline = _deadline(timeout)
    value: Any = None
    for link_id in link_ids:
        value = await wait_async(app, link_id, _left(deadline))
    return value


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _deadline(timeout: float | None) -> float | None:
    if timeout is not None and timeout < 0:
        raise ConfigError(f"timeout: expected seconds >= 0 or None, got {timeout!r}")
    return None if timeout is None else time.monotonic() + timeout


@dataclass(frozen=True)
class _Done:
    value: Any


def _look(record: JobRecord, deadline: float | None, timeout: float | None) -> float | _Done:
    """How long to wait next, or the result of a job that has ended (raising when it failed
    or was cancelled); TimeoutError when the time is up."""
    if record.state in FINAL_STATES:
        return _Done(settled(record))
    left = WAIT_STEP_S if deadline is None else deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(
            f"job {record.id} ({record.name}) did not end within {timeout:.3g} s; it is "
            f"{record.state} (see `tenure jobs show {record.id}`)"
        )
    return min(left, WAIT_STEP_S)


def settled(record: JobRecord) -> Any:
    """An ended job's result, or the exception saying how it ended otherwise."""
    if record.state == "succeeded":
        return record.result
    if record.state == "cancelled":
        raise JobCancelled(
            f"job {record.id} ({record.name}) was cancelled"
            + (f": {record.last_error}" if record.last_error else ""),
            job_id=record.id,
            error=record.last_error,
        )
    raise JobFailed(
        f"job {record.id} ({record.name}) failed: {record.last_error or 'no error recorded'}; "
        f"`tenure jobs show {record.id}` shows every attempt",
        job_id=record.id,
        error=record.last_error,
    )

"""tenure.current(): what a running job knows about its own attempt."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field

from tenure.errors import TenureError


@dataclass
class JobContext:
    job_id: str
    name: str
    queue: str
    attempt: int
    batch_id: str | None = None
    _lease_ok: Callable[[], bool] = field(default=lambda: True, repr=False)

    def lease_ok(self) -> bool:
        """False once the worker could not renew this attempt's lease: stop and return soon,
        because the attempt is about to be stopped and the job may run elsewhere."""
        return self._lease_ok()


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "tenure_current", default=None
)


def current() -> JobContext:
    """The context of the job running in this process, thread or task."""
    ctx = _current.get()
    if ctx is None:
        raise TenureError("tenure.current() is only available inside a running job")
    return ctx


def activate(ctx: JobContext | None) -> contextvars.Token[JobContext | None]:
    return _current.set(ctx)


def deactivate(token: contextvars.Token[JobContext | None]) -> None:
    _current.reset(token)

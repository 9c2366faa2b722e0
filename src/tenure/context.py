"""tenure.current(): what a running job knows about its own attempt."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tenure.errors import TenureError

if TYPE_CHECKING:
    from tenure.app import App
    from tenure.job import Sig
    from tenure.stores.base import BatchRecord


@dataclass
class BatchContext:
    """The batch a running job belongs to."""

    id: str
    _app: App = field(repr=False)
    _job_id: str = field(repr=False)
    _token: int = field(repr=False)

    def add(self, sigs: Iterable[Sig]) -> int:
        """Add jobs to this batch (a coordinator's work); returns how many were added."""
        return self._app.add_to_batch(self.id, list(sigs))

    @property
    def cancelled(self) -> bool:
        """True once the batch was cancelled or can no longer succeed: stop early."""
        info = self._app.store.get_batch(self.id)
        return info is None or info.state in ("cancelled", "failed")

    def progress(self, done: float, of: float = 1.0) -> None:
        """Report this job's own progress (`done` of `of` units) so the batch bar moves while
        long members run; it only ever goes up."""
        if of <= 0:
            raise ValueError(f"of: expected a number > 0, got {of!r}")
        self._app.store.report_progress(job_id=self._job_id, token=self._token, fraction=done / of)

    def info(self) -> BatchRecord:
        return self._app.get_batch(self.id)


@dataclass
class JobContext:
    job_id: str
    name: str
    queue: str
    attempt: int
    batch_id: str | None = None
    token: int = 0
    _app: App | None = field(default=None, repr=False)
    _lease_ok: Callable[[], bool] = field(default=lambda: True, repr=False)

    def lease_ok(self) -> bool:
        """False once the worker could not renew this attempt's lease: stop and return soon,
        because the attempt is about to be stopped and the job may run elsewhere."""
        return self._lease_ok()

    @property
    def batch(self) -> BatchContext | None:
        if self.batch_id is None or self._app is None:
            return None
        return BatchContext(self.batch_id, self._app, self.job_id, self.token)


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

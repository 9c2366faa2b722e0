"""tenure.current(): what a running job knows about its own attempt."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from tenure.core.errors import Snooze, TenureError
from tenure.stores.base import get_batch

if TYPE_CHECKING:
    from tenure.core.records import BatchRecord
    from tenure.job import Sig
    from tenure.stores.base import JobTransaction, Store


class ContextApp(Protocol):
    """What a running job's context uses of its `tenure.App` (a Protocol, so that this
    module, which the App's own modules import, does not import the App back)."""

    @property
    def store(self) -> Store: ...

    def add_to_batch(self, batch_id: str, sigs: Sequence[Sig]) -> int: ...

    def get_batch(self, batch_id: str) -> BatchRecord: ...


@dataclass
class BatchContext:
    """The batch a running job belongs to."""

    id: str
    _app: ContextApp = field(repr=False)
    _job_id: str = field(repr=False)
    _token: int = field(repr=False)

    def add(self, sigs: Iterable[Sig]) -> int:
        """Add jobs to this batch (a coordinator's work); returns how many were added."""
        return self._app.add_to_batch(self.id, list(sigs))

    @property
    def cancelled(self) -> bool:
        """True once the batch was cancelled or can no longer succeed: stop early."""
        info = get_batch(self._app.store, self.id)
        return info is None or info.state in ("cancelled", "failed")

    def progress(self, done: float, of: float = 1.0) -> None:
        """Report this job's own progress (`done` of `of` units) so the batch bar moves while
        long members run; it only ever goes up."""
        if of <= 0:
            raise ValueError(f"of: expected a number > 0, got {of!r}")
        self._app.store.report_progress(job_id=self._job_id, token=self._token, fraction=done / of)

    def info(self) -> BatchRecord:
        return self._app.get_batch(self.id)


class Once:
    """`ctx.once(key)`: an effect that must happen at most once per job, whatever re-runs it.

    The effect is recorded *before* it runs, atomically, and only by an attempt that still
    holds its lease: the first claim of a job and key is True, every later one (a re-run after
    a crash, a timeout, a lost lease) is False, and the record says which attempt claimed it.
    What this guarantees: the effect's code is entered at most once per job and key. What it
    cannot: if the process dies *inside* the effect, the effect is not retried (it may have
    happened or not), so for effects that must happen exactly once, also pass an idempotency
    key to the remote side (`f"{ctx.job_id}:charge"` as Stripe's Idempotency-Key, say).

        if ctx.once("charge"):           # as a condition
            charge_card()
        with ctx.once("email") as first:  # as a context manager
            if first:
                send_email()
        @ctx.once("notify")               # as a decorator: runs at most once, else returns None
        def notify() -> None: ...
    """

    def __init__(self, ctx: JobContext, key: str) -> None:
        self._ctx = ctx
        self.key = key
        self._claimed: bool | None = None

    def claim(self) -> bool:
        if self._claimed is None:
            app = self._ctx._app
            if app is None:
                raise TenureError("once() needs a job running under a tenure worker")
            self._claimed = app.store.claim_once(
                job_id=self._ctx.job_id, token=self._ctx.token, key=self.key
            )
        return self._claimed

    def __bool__(self) -> bool:
        return self.claim()

    def __enter__(self) -> bool:
        return self.claim()

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, fn: Callable[..., T]) -> Callable[..., T | None]:
        @functools.wraps(fn)
        def at_most_once(*args: Any, **kwargs: Any) -> T | None:
            return fn(*args, **kwargs) if self.claim() else None

        return at_most_once


@dataclass
class JobContext:
    job_id: str
    name: str
    queue: str
    attempt: int
    batch_id: str | None = None
    token: int = 0
    _app: ContextApp | None = field(default=None, repr=False)
    _lease_ok: Callable[[], bool] = field(default=lambda: True, repr=False)
    _cancelled: Callable[[], bool] = field(default=lambda: False, repr=False)
    _transaction: JobTransaction | None = field(default=None, repr=False)
    _transactional: bool = field(default=False, repr=False)

    def transaction(self) -> Any:
        """A database connection inside a transaction that commits together with this job's
        completion: the job's rows and its `succeeded` are one commit, and a crash (or a lost
        lease) leaves neither. Needs `@app.job(transactional=True)`."""
        if not self._transactional or self._app is None:
            raise TenureError(
                f"job {self.name!r}: transaction() needs @app.job(transactional=True)"
            )
        if self._transaction is None:
            self._transaction = self._app.store.job_transaction(
                job_id=self.job_id, token=self.token
            )
        return self._transaction.connection

    def lease_ok(self) -> bool:
        """False once the worker could not renew this attempt's lease: stop and return soon,
        because the attempt is about to be stopped and the job may run elsewhere."""
        return self._lease_ok()

    @property
    def cancelled(self) -> bool:
        """True once someone cancelled this job while it runs (app.cancel, `tenure jobs
        cancel`): stop soon. A sync job also gets tenure.CancelRequested raised where it is, and
        is killed `kill_after` seconds later if it keeps going."""
        return self._cancelled()

    def snooze(self, seconds: float) -> NoReturn:
        """Put this job off: the attempt ends `deferred` and the job runs again `seconds`
        later, with no try used (raises tenure.Snooze; `raise tenure.Snooze(s)` is the same)."""
        raise Snooze(seconds)

    def once(self, key: str) -> Once:
        """An effect recorded before it runs, so a re-run of this job skips it (see Once)."""
        return Once(self, key)

    @property
    def batch(self) -> BatchContext | None:
        if self.batch_id is None or self._app is None:
            return None
        return BatchContext(self.batch_id, self._app, self.job_id, self.token)


T = TypeVar("T")

_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "tenure_current", default=None
)
# The variable itself, for the worker's hot path (worker/execute.py): its `set` and `reset`
# are activate and deactivate without a call into this module around every attempt.
CURRENT = _current


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

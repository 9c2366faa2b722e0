"""Job definitions, their per-dispatch options, and signatures (a job call written down)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar

from tenure import control, waiting
from tenure.core.errors import ConfigError
from tenure.core.guards import NO_SPEC, GuardSpec
from tenure.core.retention import APP_DEFAULT, Keep, KeepOverride, KeepSetting, override_of
from tenure.core.retry import Policy, validate_policy
from tenure.settings import check_priority

if TYPE_CHECKING:
    from tenure.stores.base import Store

NO_OVERRIDE = KeepOverride()


@dataclass(frozen=True)
class Sig:
    """A job call written down, to run later: `send_invoice.sig(42)`."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str | None = None
    delay: float = 0.0
    keep: KeepOverride = NO_OVERRIDE  # this dispatch's retention, over the job's
    priority: int | None = None  # None: the job's own (`@app.job(priority=...)`)
    at: float | None = None  # run at this epoch time (options(at=datetime)), not after delay
    policy: Policy | None = None  # this dispatch's tries/timeout over the job's; None: its own


class JobsApp(Protocol):
    """What a job definition uses of its `tenure.App` (a Protocol: the App imports this
    module, so this module must not import the App back)."""

    @property
    def store(self) -> Store: ...

    def get_job(self, job_id: str) -> Any: ...

    def dispatch_sigs(self, sigs: Sequence[Sig], *, conn: Any = None) -> list[JobHandle]: ...


@dataclass(frozen=True)
class JobHandle:
    id: str
    name: str
    app: JobsApp = field(repr=False, compare=False)
    deduplicated: bool = False

    def info(self) -> Any:
        return self.app.get_job(self.id)

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the job ends and return its result (None when it returned None).
        Raises tenure.JobFailed (its `.error` is the last error) or tenure.JobCancelled when
        it ended otherwise, TimeoutError when it has not ended within `timeout` s (None: no
        limit). Sleeps on the store's wake-ups, not a busy loop."""
        return waiting.wait(self.app, self.id, timeout)

    async def wait_async(self, timeout: float | None = None) -> Any:
        """`wait` for asyncio code: `await handle.wait_async(timeout=30)`."""
        return await waiting.wait_async(self.app, self.id, timeout)


@dataclass(frozen=True)
class Chain:
    """A chain written down, to run as ONE member of a batch (Laravel's chain in a batch):
    `app.batch([a.sig(1), tenure.Chain([b.sig(), c.sig()], pass_result=True)])`. A plain list
    of signatures in a batch's list is a Chain too. The batch counts it once: succeeded when
    its last link succeeds, failed or cancelled when it stops."""

    sigs: Sequence[Sig]
    catch: Sig | None = None
    finally_: Sig | None = None
    pass_result: bool = False


@dataclass(frozen=True)
class ChainHandle:
    """`app.chain([...])`: the chain's id and its links' handles, in order."""

    id: str
    links: tuple[JobHandle, ...]
    app: JobsApp = field(repr=False, compare=False)

    @property
    def last(self) -> JobHandle:
        return self.links[-1]

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the chain ends and return its last link's result. Raises
        tenure.JobFailed / JobCancelled for the link that stopped the chain, TimeoutError
        when it has not ended within `timeout` s (None: no limit)."""
        return waiting.wait_chain(self.app, [h.id for h in self.links], timeout)

    async def wait_async(self, timeout: float | None = None) -> Any:
        """`wait` for asyncio code."""
        return await waiting.wait_chain_async(self.app, [h.id for h in self.links], timeout)

    def cancel(self) -> Any:
        """Cancel the chain: its live link is cancelled (a running one is stopped by its
        worker), the later links end cancelled, catch and finally are queued. Returns the
        tenure.control.Cancellation of that link, or None when the chain had ended."""
        return control.cancel_chain(self.app.store, [h.id for h in self.links])


class KeepDefault:
    """`tries=` not given to options(): the job's own (None is a value: unlimited)."""


KEEP = KeepDefault()


def run_at(at: datetime | None, delay: float) -> float | None:
    """`options(at=...)` as epoch seconds: an aware datetime only, since a naive one would be
    read in whatever zone each host runs in."""
    if at is None:
        return None
    if not isinstance(at, datetime):
        raise ConfigError(f"at: expected a datetime, got {type(at).__name__} {at!r}")
    if at.tzinfo is None or at.utcoffset() is None:
        raise ConfigError(
            f"at: expected a timezone-aware datetime, got the naive {at.isoformat()}; "
            "e.g. datetime(2026, 12, 24, 9, 0, tzinfo=ZoneInfo('Europe/Rome')) or "
            "datetime.now(timezone.utc) + timedelta(hours=1)"
        )
    if delay:
        raise ConfigError("at= and delay= both given: expected one of them")
    return at.timestamp()


@dataclass(frozen=True)
class DispatchOptions:
    delay: float = 0.0
    queue: str | None = None
    conn: Any = None  # the application's own DB connection: enqueue inside its transaction
    keep: KeepOverride = NO_OVERRIDE
    priority: int | None = None
    at: float | None = None
    policy: Policy | None = None


P = ParamSpec("P")
R = TypeVar("R")


class Job(Generic[P, R]):
    """A function registered with `@app.job(...)`. Calling it runs it here and now. It keeps
    the function's signature: type checkers and editors check `dispatch(...)`, `sig(...)` and
    `options(...).dispatch(...)` arguments as they check a call of the function."""

    def __init__(
        self,
        app: JobsApp,
        fn: Callable[P, R],
        *,
        name: str,
        queue: str,
        policy: Policy,
        retry_until: timedelta | datetime | None,
        encrypted: bool,
        guards: GuardSpec = NO_SPEC,
    ) -> None:
        self.app = app
        self.fn = fn
        self.name = name
        self.queue = queue
        self.policy = policy
        policy.text  # noqa: B018 - its stored text, made once here rather than at a dispatch
        self.retry_until = retry_until
        self.encrypted = encrypted
        self.guards = guards
        # decided once here, not per dispatch: a job without guards stores none
        self.unguarded = guards == NO_SPEC
        self.priority = 0  # lower runs first within a queue (`@app.job(priority=...)`)
        self.transactional = False  # ctx.transaction() commits with the completion
        self.keep = NO_OVERRIDE  # keep_succeeded= / keep_failed= over the App's retention
        self._kept: tuple[Keep, KeepOverride, Keep] | None = None  # (App's, job's, resolved)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature = inspect.signature(fn)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tenure job {self.name!r} queue={self.queue!r}>"

    def sig(self, *args: P.args, **kwargs: P.kwargs) -> Sig:
        return Sig(self.name, args, kwargs)

    def keep_over(self, app_keep: Keep) -> Keep:
        """This job's retention over the App's, resolved once (not per dispatch)."""
        kept = self._kept
        if kept is None or kept[0] is not app_keep or kept[1] is not self.keep:
            kept = self._kept = (app_keep, self.keep, self.keep.over(app_keep))
        return kept[2]

    def check_call(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Refuse, at dispatch, a call the function cannot take (a missing or extra argument,
        a misspelled keyword): in the worker it would only fail every try with TypeError."""
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(
                f"job {self.name!r} cannot be called with these arguments: {exc} "
                f"(its signature: {self.name}{self.signature})"
            ) from None

    def options(
        self,
        *,
        delay: float | timedelta = 0.0,
        queue: str | None = None,
        conn: Any = None,
        keep_succeeded: KeepSetting = APP_DEFAULT,
        keep_failed: KeepSetting = APP_DEFAULT,
        priority: int | None = None,
        at: datetime | None = None,
        tries: int | KeepDefault | None = KEEP,
        timeout: float | None = None,
    ) -> BoundJob[P, R]:
        """Options for one dispatch. `conn`: your own database connection (psycopg, or sqlite3
        on the same file), so the job is enqueued in your transaction: rolled back with it,
        visible to workers only after your commit. `keep_*`: this run's retention.
        `priority`: this dispatch's, instead of the job's (lower runs first in the queue).
        `at`: run at this time (a timezone-aware datetime; a past one runs now), instead of
        `delay` seconds from now. `tries`, `timeout`: this dispatch's, over the job's."""
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        keep = override_of(keep_succeeded, keep_failed)
        if priority is not None:
            check_priority(priority)
        chosen = DispatchOptions(
            delay=seconds,
            queue=queue,
            conn=conn,
            keep=keep,
            priority=priority,
            at=run_at(at, seconds),
            policy=self.policy_with(tries, timeout),
        )
        return BoundJob(self, chosen)

    def policy_with(self, tries: int | KeepDefault | None, timeout: float | None) -> Policy | None:
        """The job's policy with one dispatch's tries and timeout, validated as @app.job's
        are; None when the dispatch changes neither."""
        if tries is KEEP and timeout is None:
            return None
        changed = self.policy
        if not isinstance(tries, KeepDefault):
            changed = replace(changed, tries=tries)
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise ConfigError(f"timeout: expected seconds > 0, got {timeout!r}")
            changed = replace(changed, timeout=float(timeout))
        # this job's retry_until is fixed at dispatch: a placeholder lets tries=None through
        validate_policy(replace(changed, retry_until=0.0) if self.retry_until else changed)
        return changed

    def dispatch(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle:
        return self.app.dispatch_sigs([Sig(self.name, args, kwargs)])[0]

    def dispatch_many(self, calls: Iterable[Sequence[Any] | Sig]) -> list[JobHandle]:
        return BoundJob(self, DispatchOptions()).dispatch_many(calls)


@dataclass(frozen=True)
class BoundJob(Generic[P, R]):
    """A job with options for one dispatch: `job.options(delay=30, queue="mail")`."""

    job: Job[P, R]
    opts: DispatchOptions

    def sig(self, *args: P.args, **kwargs: P.kwargs) -> Sig:
        return self._sig(args, kwargs)

    def _sig(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Sig:
        return Sig(
            self.job.name,
            tuple(args),
            kwargs,
            queue=self.opts.queue,
            delay=self.opts.delay,
            keep=self.opts.keep,
            priority=self.opts.priority,
            at=self.opts.at,
            policy=self.opts.policy,
        )

    def dispatch(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle:
        return self.job.app.dispatch_sigs([self._sig(args, kwargs)], conn=self.opts.conn)[0]

    def dispatch_many(self, calls: Iterable[Sequence[Any] | Sig]) -> list[JobHandle]:
        sigs = [c if isinstance(c, Sig) else self._sig(c, {}) for c in calls]
        return self.job.app.dispatch_sigs(sigs, conn=self.opts.conn)

"""App: the registry of jobs, the store they live in, and the calls that send and read them."""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar, overload

from tenure import sending, tracing
from tenure.control import BatchInfo, Operations
from tenure.coordinator import COORDINATOR, coordinator, plan_over_ids
from tenure.core import payload, retention
from tenure.core.errors import ConfigError, JobNotFound, UnknownJob
from tenure.core.guards import KeyFunction
from tenure.core.records import PeriodicClaim
from tenure.core.retry import Backoff
from tenure.core.schedule import Schedule
from tenure.core.urls import redact
from tenure.hooks import Hooks
from tenure.job import ChainHandle, Job, JobHandle, Sig
from tenure.periodic import PeriodicJob, PeriodicStatus, check_catch_up, run_id, status
from tenure.sending import Member
from tenure.settings import URL_ENV, JobOptions
from tenure.stores import Store, open_store, store_class
from tenure.stores.base import get_job

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_URL = "sqlite:///tenure.db"


def store_url(given: str | None) -> tuple[str, str]:
    """The store an App uses and why: $TENURE_URL > the App's URL > ./tenure.db (a command's
    `--url` wins over all three: App.use_url)."""
    env = os.environ.get(URL_ENV)
    if env:
        if given and given != env:
            return env, f"${URL_ENV}, which wins over the App's URL"
        return env, f"${URL_ENV}"
    if given:
        return given, "the App's URL"
    return DEFAULT_URL, f"the default ./tenure.db: no --url, ${URL_ENV} or App URL"


@dataclass(frozen=True)
class BatchHandle:
    id: str
    app: App = field(repr=False, compare=False)

    def info(self) -> BatchInfo:
        return self.app.get_batch(self.id)


class App(Operations):
    """`tenure.App("sqlite:///tenure.db")`. The store: $TENURE_URL when set (it wins over the
    URL given here, so that one variable points every process at one store), else the URL
    given here, else sqlite:///tenure.db; `url_source` says which won. A command's or
    worker's `--url` wins over both (`use_url`)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        max_payload_bytes: int = payload.DEFAULT_MAX_PAYLOAD_BYTES,
        keep_succeeded: timedelta | float | None = retention.DEFAULT_KEEP_SUCCEEDED,
        keep_failed: timedelta | float | None = retention.DEFAULT_KEEP_FAILED,
    ) -> None:
        self.url, self.url_source = store_url(url)
        self.keep = retention.keep_of(keep_succeeded, keep_failed)  # None: kept forever
        self.max_payload_bytes = max_payload_bytes
        self.jobs: dict[str, Job[..., Any]] = {}
        self.periodic_jobs: dict[str, PeriodicJob] = {}
        self._store: Store | None = None
        self._store_pid: int | None = None
        self.hooks = Hooks()  # @app.on_child_start, @app.around_attempt (tenure.hooks)
        self.on_child_start = self.hooks.on_child_start
        self.around_attempt = self.hooks.around_attempt
        # tenure.testing.inline() runs what was just dispatched, in the test process
        self.after_dispatch: Callable[[], None] | None = None
        coordinate = coordinator(self.add_to_batch)
        self.job(name=COORDINATOR, timeout=60, tries=5, backoff=[1, 5, 30])(coordinate)

    def __repr__(self) -> str:
        return f"<tenure.App {redact(self.url)} jobs={sorted(self.jobs)}>"

    @property
    def store(self) -> Store:
        # One store per process: a forked child must not share its parent's connections.
        if self._store is None or self._store_pid != os.getpid():
            self._store = open_store(self.url)
            self._store_pid = os.getpid()
        return self._store

    def use_url(self, url: str, source: str) -> None:
        """Point this App at another store (`--url`, a test's own file); `source` is what
        `url_source` then says."""
        self.close()
        self.url, self.url_source = url, source

    def close(self) -> None:
        """Close the store's connections; the next use opens them again."""
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- defining jobs -----------------------------------------------------------------
    # The keywords and their defaults are JobOptions' (tenure/settings.py); listed here so
    # that editors and type checkers know them.
    @overload
    def job(self, fn: Callable[P, R]) -> Job[P, R]: ...

    @overload
    def job(
        self,
        *,
        name: str | None = ...,
        queue: str = ...,
        timeout: float = ...,
        kill_after: float = ...,
        tries: int | None = ...,
        backoff: Backoff = ...,
        retry_until: timedelta | datetime | None = ...,
        max_exceptions: int | None = ...,
        count_crashes: bool = ...,
        fail_on_timeout: bool = ...,
        encrypted: bool = ...,
        unique: KeyFunction | bool | None = ...,
        unique_for: float | None = ...,
        unique_until: str = ...,
        overlap: KeyFunction | bool | None = ...,
        overlap_delay: float = ...,
        rate_limit: str | None = ...,
        rate_key: KeyFunction | None = ...,
        concurrency: int | None = ...,
        concurrency_key: KeyFunction | None = ...,
        debounce: float | None = ...,
        debounce_key: KeyFunction | None = ...,
        fair_key: KeyFunction | None = ...,
        fair_weights: dict[str, float] | None = ...,
        transactional: bool = ...,
        keep_succeeded: retention.KeepSetting = ...,
        keep_failed: retention.KeepSetting = ...,
        priority: int = ...,
    ) -> Callable[[Callable[P, R]], Job[P, R]]: ...

    def job(self, fn: Callable[..., Any] | None = None, **settings: Any) -> Any:
        """Register a function as a job: `@app.job(timeout=60, tries=3, backoff=10)`."""
        if fn is not None:
            return self._register(fn, settings)
        return lambda f: self._register(f, settings)

    def _register(self, fn: Callable[P, R], settings: dict[str, Any]) -> Job[P, R]:
        try:
            options = JobOptions.of(settings)
        except ConfigError as exc:
            raise ConfigError(f"@app.job on {fn.__qualname__}: {exc}") from None
        job_name = options.name or fn.__qualname__
        if job_name in self.jobs and self.jobs[job_name].fn is not fn:
            other = self.jobs[job_name].fn
            raise ConfigError(
                f"job name {job_name!r} is already used by {other.__module__}.{other.__qualname__};"
                " pass name= to tell them apart"
            )
        try:
            policy = options.policy()
            guard_spec = options.guards()
            keep = options.keep()
            if options.transactional:
                self._check_transactional(fn)
        except ConfigError as exc:
            raise ConfigError(f"job {job_name!r}: {exc}") from None
        job = Job(
            self,
            fn,
            name=job_name,
            queue=options.queue,
            policy=policy,
            retry_until=options.retry_until,
            encrypted=options.encrypted,
            guards=guard_spec,
        )
        job.transactional, job.keep = options.transactional, keep
        job.priority = options.priority
        self.jobs[job_name] = job
        return job

    def periodic(
        self, expression: str, *, tz: str | None = None, catch_up: str = "latest", **settings: Any
    ) -> Callable[[Callable[P, R]], Job[P, R]]:
        """Register a job that takes no arguments, run on a cron schedule in time zone `tz`
        (IANA name, default UTC): `@app.periodic("*/5 * * * *", tz="Europe/Rome")`. The
        workers dispatch each due time once (see tenure.periodic); after downtime only the
        latest missed one runs, none with `catch_up="none"`. Other keywords are @app.job's."""
        if not isinstance(expression, str):  # @app.periodic without its schedule
            raise ConfigError(
                'cron: expected a schedule such as @app.periodic("*/5 * * * *"), got '
                f"{expression!r}"
            )
        schedule = Schedule.parse(expression, tz)
        check_catch_up(catch_up)

        def register(fn: Callable[P, R]) -> Job[P, R]:
            if isinstance(fn, Job):  # @app.periodic over @app.job: registered twice
                raise ConfigError(
                    f"@app.periodic on {fn.name}: @app.periodic registers the job itself; "
                    "remove the @app.job beneath it and give its settings to @app.periodic("
                    "..., timeout=..., tries=...)"
                )
            try:
                inspect.signature(fn).bind()
            except TypeError:
                raise ConfigError(
                    f"@app.periodic on {fn.__qualname__}: a periodic job is called with no "
                    f"arguments, but it takes {fn.__name__}{inspect.signature(fn)}; give the "
                    "parameters defaults, or read what they carry inside the job"
                ) from None
            job = self._register(fn, settings)
            self.periodic_jobs[job.name] = PeriodicJob(job.name, job.queue, schedule, catch_up)
            return job

        return register

    def _check_transactional(self, fn: Callable[..., Any]) -> None:
        capabilities = store_class(self.url).capabilities
        if not capabilities.job_transactions:
            raise ConfigError(
                f"transactional=True needs PostgreSQL (or SQLite): {capabilities.name} cannot "
                "commit the job's own writes together with its completion"
            )
        if inspect.iscoroutinefunction(fn):
            raise ConfigError("transactional=True is for sync jobs (they run in a child process)")

    def get_definition(self, name: str) -> Job[..., Any]:
        """The job registered under `name`; UnknownJob naming the known ones otherwise."""
        try:
            return self.jobs[name]
        except KeyError:
            known = ", ".join(sorted(self.jobs)) or "none"
            raise UnknownJob(f"no job named {name!r} in this app (known: {known})") from None

    # -- sending -----------------------------------------------------------------------
    def dispatch_sigs(self, sigs: Sequence[Sig], *, conn: Any = None) -> list[JobHandle]:
        """Enqueue signatures in one round trip; nothing is stored if any of them is invalid.
        With `conn`, inside the application's own transaction (see Job.options)."""
        if tracing.API in sys.modules:  # the process uses OpenTelemetry: a span around it
            with tracing.dispatching([s.name for s in sigs]) as traced:
                new = [sending.new_job(self, sig, trace=traced.carrier) for sig in sigs]
                traced.sent([(n.id, n.name, n.queue) for n in new])
                ids = self.store.enqueue_many(new, conn=conn) if new else []
        else:
            new = [sending.new_job(self, sig) for sig in sigs]
            ids = self.store.enqueue_many(new, conn=conn) if new else []
        if self.after_dispatch is not None and conn is None:
            self.after_dispatch()
        return [
            JobHandle(stored, n.name, self, deduplicated=stored != n.id)
            for n, stored in zip(new, ids, strict=True)
        ]

    def chain(
        self,
        sigs: Sequence[Sig],
        *,
        catch: Sig | None = None,
        finally_: Sig | None = None,
        pass_result: bool = False,
        conn: Any = None,
    ) -> ChainHandle:
        """Run `sigs` one after another, each once the previous succeeded: the store queues
        the next link in the transaction (script) that records the previous one's success. A
        link that fails for good (or is cancelled) stops the chain: the later links end
        `cancelled` and `catch` is queued, once; `finally_` is queued once however it ends.
        `pass_result`: the previous link's result is passed as each next link's first
        argument. `.wait()` returns the last link's result."""
        chain_id, links = sending.start_chain(
            self, sigs, catch=catch, finally_=finally_, pass_result=pass_result, conn=conn
        )
        if self.after_dispatch is not None and conn is None:
            self.after_dispatch()
        return ChainHandle(chain_id, tuple(JobHandle(i, n, self) for i, n in links), self)

    # -- periodic jobs -----------------------------------------------------------------
    def claim_periodic(self, name: str, due: float, *, run: bool) -> PeriodicClaim:
        """Claim one due time of a periodic job in the store, dispatching its run with the
        claim when `run` (the workers call this; see tenure.periodic)."""
        periodic = self.periodic_jobs[name]
        job = sending.new_job(self, Sig(name), job_id=run_id(name, due)) if run else None
        return self.store.claim_periodic(name=name, queue=periodic.queue, due=due, job=job)

    def periodic_last_dues(self) -> dict[str, float]:
        """The latest due time claimed of each periodic job the store knows."""
        return {r.name: r.last_due for r in self.store.list_periodic()}

    def periodic_status(self, *, read_store: bool = True) -> list[PeriodicStatus]:
        """Each periodic job with its next due time and its latest run (for `tenure periodic
        list` and the dashboard). Without `read_store` (no store yet: no worker has run),
        the schedules from the code alone, on this host's clock."""
        stored = {r.name: r for r in self.store.list_periodic()} if read_store else {}
        now = self.now() if read_store else time.time()
        out = []
        for name in sorted(self.periodic_jobs):
            record = stored.get(name)
            last = (
                get_job(self.store, record.last_job_id) if record and record.last_job_id else None
            )
            out.append(status(self.periodic_jobs[name], record, last, now))
        return out

    # -- batches -----------------------------------------------------------------------
    def batch(
        self,
        sigs: Sequence[Member],
        *,
        name: str = "batch",
        then: Sig | None = None,
        catch: Sig | None = None,
        finally_: Sig | None = None,
        allow_failures: bool = False,
        queue: str | None = None,
        total: int | None = None,
        first_ids: Callable[[str], list[str]] | None = None,
        conn: Any = None,
    ) -> BatchHandle:
        """Start a batch: its jobs, and callback jobs run once each when it settles. A member
        may be a chain (`tenure.Chain([...])`, or a plain list of signatures): one member,
        succeeded when its last link succeeds.

        `conn`: your own database connection (psycopg, or sqlite3 on the store's file), so the
        batch, its members and its callbacks are created in your transaction: a rollback
        leaves none of them, and workers see them only after your commit (not on Redis)."""
        batch_id = sending.start_batch(
            self,
            sigs,
            name=name,
            then=then,
            catch=catch,
            finally_=finally_,
            allow_failures=allow_failures,
            queue=queue,
            total=total,
            first_ids=first_ids,
            conn=conn,
        )
        return BatchHandle(batch_id, self)

    def batch_over_ids(
        self,
        job: Job[..., Any],
        lo: int,
        hi: int,
        *,
        chunk: int = 50,
        slice_jobs: int = 200,
        **batch_options: Any,
    ) -> BatchHandle:
        """The coordinator pattern: job(lo, hi) over inclusive id ranges of `chunk` ids, planned
        `slice_jobs` ranges at a time by coordinator jobs, with a declared total. Takes the
        options of `batch()`, `conn=` included."""
        plan = plan_over_ids(
            job.name,
            lo,
            hi,
            chunk=chunk,
            slice_jobs=slice_jobs,
            name=batch_options.pop("name", None),
            queue=batch_options.pop("queue", None),
        )
        return self.batch(
            plan.sigs, name=plan.name, total=plan.total, first_ids=plan.first_ids, **batch_options
        )

    def add_to_batch(
        self, batch_id: str, sigs: Sequence[Member], *, ids: Sequence[str] | None = None
    ) -> int:
        """Add members to a running batch; ids already present are skipped, so a re-run
        coordinator adds nothing twice. How many were added: 0 once the batch no longer takes
        work."""
        return sending.add_members(self, batch_id, sigs, ids)

    def get_batch(self, batch_id: str) -> BatchInfo:
        """The batch: its counts, state and `progress` (0..1); JobNotFound when absent."""
        record = self.find_batch(batch_id)
        if record is None:
            raise JobNotFound(f"no batch with id {batch_id!r} in {redact(self.url)}")
        return record

    def cancel_batch(self, batch_id: str) -> bool:
        """Queued jobs of the batch are not started; running ones see `batch.cancelled`."""
        return self.store.cancel(batch_id=batch_id).accepted


new_id = sending.new_id  # where bench/ and older code import it from

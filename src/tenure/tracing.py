"""OpenTelemetry spans around dispatch and each attempt, linked through the stored job.

All of tenure's OpenTelemetry code lives here. The rest of tenure calls `dispatching()` and
`attempt_started()`, which do nothing at all unless the process traces with OpenTelemetry:
it has imported `opentelemetry.trace` and set a tracer provider (configuring one does both, and
so does `opentelemetry-instrument`). tenure never imports it itself: a process that has the
API installed only because a web framework pulled it in pays nothing, not even the import,
and one whose libraries import the API without a provider being set (redis-py 8 does, for its
metrics) makes no spans either: they would all be non-recording. tenure works the same
without the package.

The shape follows OpenTelemetry's messaging conventions, with tenure as the messaging system:

- A dispatch is a "publish" operation: a PRODUCER span, `dispatch JOB` (or `dispatch batch`),
  whose context is the creation context of every job it stores. Its W3C `traceparent` (and
  `tracestate`, if any) travel inside the stored payload, under "trace", so they survive
  retries, worker restarts and store failovers like the arguments do.
- An attempt is a "process" operation: a CONSUMER span, `process JOB`, started in the process
  that runs the job, with a *link* to the creation context, not a parent. The conventions make
  links the default because a job may start minutes or hours after the request that sent it, run
  several times, or be one of 10,000 members of a batch: as children, the attempts would stretch
  the request's trace over hours and bury it in thousands of spans. A link keeps each trace
  honest and still lets a tracing UI jump from the request to every attempt and back.

Span names carry the job's name where the conventions put the destination (the queue is the
`messaging.destination.name` attribute): job names are few and fixed, like destinations, and
say what ran. Only the W3C trace context travels, never baggage: baggage often holds user
data, and a stored payload outlives the request. A tracing failure never fails a job: every
call here swallows and logs its own errors.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Protocol

log = logging.getLogger("tenure.tracing")

SYSTEM = "tenure"
TRACER_NAME = "tenure"


# The module whose presence in sys.modules says the process uses OpenTelemetry. The hot paths
# (dispatch, each attempt) test `tracing.API in sys.modules` themselves and, when it is not
# there, do not call into this module at all.
API = "opentelemetry.trace"


def _api() -> ModuleType | None:
    """`opentelemetry.trace` if this process already imported it, else None (a dict lookup)."""
    return sys.modules.get(API)


class _Loaded:
    """What the spans need from OpenTelemetry, looked up once per process."""

    def __init__(self, trace: ModuleType) -> None:
        from tenure.version import __version__

        self.trace = trace
        self.context: Any = importlib.import_module("opentelemetry.context")
        tracecontext = importlib.import_module("opentelemetry.trace.propagation.tracecontext")
        self.propagator: Any = tracecontext.TraceContextTextMapPropagator()
        # A tracer taken before the application sets its provider is a proxy that follows
        # the provider set later, so caching it is safe.
        self.tracer: Any = trace.get_tracer(TRACER_NAME, __version__)
        # What get_tracer_provider() returns while no provider is set: spans would be no-ops.
        self.unset: tuple[type, ...] = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)

    def tracing(self) -> bool:
        """Whether a tracer provider is set: asked on each use, since one may be set later."""
        return not isinstance(self.trace.get_tracer_provider(), self.unset)


_loaded: _Loaded | None = None
_unusable: ModuleType | None = None


def _otel() -> _Loaded | None:
    global _loaded, _unusable
    trace = _api()
    if trace is None or trace is _unusable:
        return None
    if _loaded is None or _loaded.trace is not trace:
        try:
            _loaded = _Loaded(trace)
        except Exception:  # a broken install must not stop dispatching; said once
            _unusable = trace
            log.warning("OpenTelemetry is imported but unusable: no spans", exc_info=True)
            return None
    return _loaded if _loaded.tracing() else None


# -- dispatch --------------------------------------------------------------------------------
class Dispatch:
    """A dispatch being traced. `carrier` goes into each job's payload (None: nothing to send)."""

    carrier: dict[str, str] | None = None

    def sent(self, jobs: Sequence[tuple[str, str, str]]) -> None:
        """The jobs stored, as (id, name, queue): recorded on the span."""


_NO_DISPATCH = Dispatch()


class _DispatchSpan(Dispatch):
    def __init__(self, otel: _Loaded, span: Any) -> None:
        self._span = span
        carrier: dict[str, str] = {}
        otel.propagator.inject(carrier, context=otel.trace.set_span_in_context(span))
        # Unsampled or no SDK: the context is invalid and nothing was injected.
        self.carrier = carrier or None

    def sent(self, jobs: Sequence[tuple[str, str, str]]) -> None:
        try:
            span = self._span
            queues = sorted({queue for _, _, queue in jobs})
            if len(queues) == 1:
                span.set_attribute("messaging.destination.name", queues[0])
            if len(jobs) == 1:
                span.set_attribute("messaging.message.id", jobs[0][0])
                span.set_attribute("tenure.job.id", jobs[0][0])
            else:
                span.set_attribute("messaging.batch.message_count", len(jobs))
        except Exception:
            log.debug("could not annotate the dispatch span", exc_info=True)


@contextmanager
def dispatching(names: Sequence[str], *, batch_id: str | None = None) -> Iterator[Dispatch]:
    """A PRODUCER span around storing jobs (of these job names); inside a running job, it is
    that attempt's child. An error while storing is recorded on the span and re-raised."""
    otel = _otel() if names else None  # nothing to store: no span
    if otel is None:
        yield _NO_DISPATCH
        return
    try:
        distinct = sorted(set(names))
        title = "batch" if batch_id is not None else distinct[0] if len(distinct) == 1 else ""
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "publish",
            "messaging.operation.name": "dispatch",
        }
        if len(distinct) == 1:
            attributes["tenure.job.name"] = distinct[0]
        if batch_id is not None:
            attributes["tenure.batch.id"] = batch_id
        span = otel.tracer.start_span(
            f"dispatch {title}".strip(), kind=otel.trace.SpanKind.PRODUCER, attributes=attributes
        )
        traced = _DispatchSpan(otel, span)
    except Exception:
        log.debug("could not start a dispatch span", exc_info=True)
        yield _NO_DISPATCH
        return
    try:
        yield traced
    except BaseException as exc:
        _fail(otel, span, exc)
        raise
    finally:
        _end(span)


# -- attempts --------------------------------------------------------------------------------
class Attempt:
    """An attempt being traced; `end()` once, with the outcome the job's process saw."""

    def end(self, outcome: str, exc: BaseException | None = None) -> None:
        """Record the outcome (and the exception, if any) and close the span."""


_NO_ATTEMPT = Attempt()


class _AttemptSpan(Attempt):
    def __init__(self, otel: _Loaded, span: Any) -> None:
        self._otel = otel
        self._span: Any = span
        # current while the job runs: its own spans, and the jobs it dispatches, nest under it
        self._token: Any = otel.context.attach(otel.trace.set_span_in_context(span))

    def end(self, outcome: str, exc: BaseException | None = None) -> None:
        span, self._span = self._span, None
        if span is None:
            return
        try:
            self._otel.context.detach(self._token)
        except Exception:
            log.debug("could not detach the attempt's context", exc_info=True)
        try:
            span.set_attribute("tenure.outcome", outcome)
            if exc is not None:
                _fail(self._otel, span, exc)
        except Exception:
            log.debug("could not annotate the attempt span", exc_info=True)
        _end(span)


class AttemptOf(Protocol):
    """What an attempt span describes: a JobContext and a Reservation both have it."""

    @property
    def name(self) -> str: ...
    @property
    def job_id(self) -> str: ...
    @property
    def queue(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def batch_id(self) -> str | None: ...


def attempt_started(of: AttemptOf, carrier: dict[str, str] | None) -> Attempt:
    """A CONSUMER span for one attempt, linked to the dispatch that stored the job (if the
    payload carries its context), and made current until `end()`."""
    name, job_id, queue, attempt, batch_id = of.name, of.job_id, of.queue, of.attempt, of.batch_id
    otel = _otel()
    if otel is None:
        return _NO_ATTEMPT
    try:
        links = []
        if carrier:
            created = otel.trace.get_current_span(otel.propagator.extract(carrier))
            context = created.get_span_context()
            if context.is_valid:
                links.append(otel.trace.Link(context, {"tenure.link": "dispatch"}))
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": queue,
            "messaging.message.id": job_id,
            "tenure.job.name": name,
            "tenure.job.id": job_id,
            "tenure.attempt": attempt,
        }
        if batch_id is not None:
            attributes["tenure.batch.id"] = batch_id
        # A new root, not the dispatch's child: see the module's docstring.
        span = otel.tracer.start_span(
            f"process {name}",
            context=otel.context.Context(),
            kind=otel.trace.SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
        )
        return _AttemptSpan(otel, span)
    except Exception:
        log.debug("could not start an attempt span", exc_info=True)
        return _NO_ATTEMPT


# -- inside ----------------------------------------------------------------------------------
def _fail(otel: _Loaded, span: Any, exc: BaseException) -> None:
    try:
        span.record_exception(exc)
        span.set_attribute("error.type", type(exc).__qualname__)
        description = f"{type(exc).__name__}: {exc}"[:200]
        span.set_status(otel.trace.Status(otel.trace.StatusCode.ERROR, description))
    except Exception:
        log.debug("could not record the exception on a span", exc_info=True)


def _end(span: Any) -> None:
    try:
        span.end()
    except Exception:  # an exporter's failure is the tracing pipeline's, not the job's
        log.debug("could not end a span", exc_info=True)

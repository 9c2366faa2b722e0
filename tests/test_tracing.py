"""OpenTelemetry spans (tenure.tracing): a dispatch is a PRODUCER span whose W3C trace context
travels in the stored payload; every attempt is a CONSUMER span, in the process that runs it,
linked to that dispatch. Proved through the store with `tenure.testing.drain`, with a real
worker process, and without OpenTelemetry at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, StatusCode
    from opentelemetry.util._once import Once
except ImportError:  # skipped locally; the dev extras pin the SDK, so CI must have it
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip(
        "opentelemetry-sdk is not installed (pip install -e '.[dev]')", allow_module_level=True
    )

import tenure
from tenure import tracing
from tenure.coordinator import COORDINATOR
from tenure.core.records import NewJob
from tenure.core.retry import Policy
from tenure.testing import drain

SRC = Path(__file__).resolve().parents[1] / "src"


@contextmanager
def global_tracer_provider(provider: trace.TracerProvider) -> Iterator[None]:
    """Install `provider` as the process's tracer provider for one test, then put back what was
    there. OpenTelemetry sets it once per process; its own test helpers (reset_trace_globals)
    reset the same globals between tests. tenure's cached tracer is reset with them."""
    saved = (trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded)
    trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded = Once(), None, None
    trace.set_tracer_provider(provider)
    try:
        yield
    finally:
        if isinstance(provider, TracerProvider):
            provider.shutdown()
        trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded = saved


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with global_tracer_provider(provider):
        yield exporter


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tenure.App]:
    a = tenure.App(f"sqlite:///{tmp_path / 'tenure.db'}")
    yield a
    a.close()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def linked_to(span: ReadableSpan) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


def ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def traceparent(app: tenure.App, job_id: str) -> str:
    return str(json.loads(app.get_job(job_id).payload)["trace"]["traceparent"])


def test_an_attempt_span_is_linked_to_the_dispatch_span_it_came_from(
    app: tenure.App, spans: InMemorySpanExporter
) -> None:
    @app.job(name="send_invoice", queue="mail")
    def send_invoice(order_id: int) -> None: ...

    h = send_invoice.dispatch(42)
    (dispatch,) = named(spans, "dispatch send_invoice")
    trace_id, span_id = ids(dispatch)
    # the W3C context of the dispatch span is stored with the job
    assert traceparent(app, h.id) == f"00-{trace_id:032x}-{span_id:016x}-03"
    assert dispatch.kind == SpanKind.PRODUCER
    assert dispatch.attributes is not None
    assert dispatch.attributes["messaging.system"] == "tenure"
    assert dispatch.attributes["messaging.destination.name"] == "mail"
    assert dispatch.attributes["tenure.job.id"] == h.id

    assert [j.state for j in drain(app)] == ["succeeded"]
    (attempt,) = named(spans, "process send_invoice")
    assert attempt.kind == SpanKind.CONSUMER
    assert linked_to(attempt) == [(trace_id, span_id)]
    # a link, not a parent: the attempt starts a trace of its own (messaging conventions)
    assert attempt.parent is None and ids(attempt)[0] != trace_id
    assert attempt.attributes is not None
    assert {k: attempt.attributes[k] for k in ("tenure.job.name", "tenure.job.id")} == {
        "tenure.job.name": "send_invoice",
        "tenure.job.id": h.id,
    }
    assert attempt.attributes["messaging.destination.name"] == "mail"
    assert (attempt.attributes["tenure.attempt"], attempt.attributes["tenure.outcome"]) == (
        1,
        "succeeded",
    )
    assert attempt.status.status_code == StatusCode.UNSET


def test_every_attempt_of_a_failing_job_links_to_the_one_dispatch_and_records_the_error(
    app: tenure.App, spans: InMemorySpanExporter
) -> None:
    @app.job(name="charge", tries=2, backoff=0)
    def charge(amount: int) -> None:
        raise ValueError(f"card declined for {amount}")

    h = charge.dispatch(5)
    (dispatch,) = named(spans, "dispatch charge")
    assert [j.state for j in drain(app)] == ["queued", "failed"]  # a retry, then the end
    attempts = named(spans, "process charge")
    assert [a.attributes["tenure.attempt"] for a in attempts if a.attributes] == [1, 2]
    for attempt in attempts:
        assert linked_to(attempt) == [ids(dispatch)]
        assert attempt.attributes is not None
        assert attempt.attributes["tenure.outcome"] == "failed"
        assert attempt.attributes["error.type"] == "ValueError"
        assert attempt.status.status_code == StatusCode.ERROR
        assert attempt.status.description == "ValueError: card declined for 5"
        (event,) = attempt.events
        assert event.name == "exception" and event.attributes is not None
        assert event.attributes["exception.message"] == "card declined for 5"
    assert app.get_job(h.id).state == "failed"


def test_a_job_dispatched_by_a_job_is_dispatched_inside_its_attempt(
    app: tenure.App, spans: InMemorySpanExporter
) -> None:
    @app.job(name="notify")
    def notify(order_id: int) -> None: ...

    @app.job(name="place_order")
    def place_order(order_id: int) -> None:
        notify.dispatch(order_id)

    place_order.dispatch(7)
    drain(app)
    (outer,) = named(spans, "process place_order")
    (inner_dispatch,) = named(spans, "dispatch notify")
    (inner,) = named(spans, "process notify")
    assert inner_dispatch.parent is not None
    assert (inner_dispatch.parent.trace_id, inner_dispatch.parent.span_id) == ids(outer)
    assert linked_to(inner) == [ids(inner_dispatch)]


def test_batch_members_and_callbacks_link_to_the_batch_dispatch_and_coordinators_chain(
    app: tenure.App, spans: InMemorySpanExporter
) -> None:
    @app.job(name="export_rows")
    def export_rows(lo: int, hi: int) -> None: ...

    @app.job(name="finish")
    def finish(tag: str) -> None: ...

    b = app.batch([export_rows.sig(1, 2), export_rows.sig(3, 4)], then=finish.sig("done"))
    (created,) = named(spans, "dispatch batch")
    assert created.attributes is not None and created.attributes["tenure.batch.id"] == b.id
    assert created.attributes["messaging.batch.message_count"] == 2
    drain(app)
    assert app.get_batch(b.id).state == "succeeded"
    members = named(spans, "process export_rows")
    (then,) = named(spans, "process finish")
    assert [linked_to(s) for s in (*members, then)] == [[ids(created)]] * 3
    assert {s.attributes["tenure.batch.id"] for s in members if s.attributes} == {b.id}

    # the coordinator pattern: each slice's dispatch happens inside the coordinator's attempt
    spans.clear()
    app.batch_over_ids(export_rows, 1, 30, chunk=5, slice_jobs=3)  # 6 ranges, 2 coordinators
    (over,) = named(spans, "dispatch batch")
    drain(app)
    coordinators = named(spans, f"process {COORDINATOR}")
    slices = [s for s in named(spans, "dispatch batch") if s is not over]
    assert len(coordinators) == len(slices) == 2
    assert linked_to(coordinators[0]) == [ids(over)]
    for coordinator, added in zip(coordinators, slices, strict=True):
        assert added.parent is not None
        assert (added.parent.trace_id, added.parent.span_id) == ids(coordinator)
    assert linked_to(coordinators[1]) == [ids(slices[0])]  # planned by the first coordinator
    ranges = named(spans, "process export_rows")
    assert len(ranges) == 6
    assert {linked_to(s)[0] for s in ranges} == {ids(s) for s in slices}


def test_payloads_without_a_trace_context_or_with_a_damaged_one_still_run(
    app: tenure.App, spans: InMemorySpanExporter
) -> None:
    """Rows stored before tracing existed (or by an untraced producer) carry no "trace"; a
    damaged one costs the link, never the job."""

    @app.job(name="legacy")
    def legacy(n: int) -> None: ...

    payloads = [
        '{"args":[1],"kwargs":{}}',
        '{"args":[2],"kwargs":{},"trace":"00-not-a-dict"}',
        '{"args":[3],"kwargs":{},"trace":{"traceparent":"00-zz-zz-01"}}',
        '{"args":[4],"kwargs":{},"trace":{"traceparent":7}}',
    ]
    app.store.enqueue_many(
        [
            NewJob(id=f"old-{i}", name="legacy", queue="default", payload=p, policy=Policy())
            for i, p in enumerate(payloads)
        ]
    )
    assert [j.state for j in drain(app)] == ["succeeded"] * 4
    attempts = named(spans, "process legacy")
    assert len(attempts) == 4 and all(not s.links for s in attempts)


def test_an_unsampled_or_unconfigured_tracer_stores_no_trace_context(app: tenure.App) -> None:
    """The API imported but no SDK set up (a framework pulled it in): no span is recorded, so
    nothing is injected and the payload stays as it was."""

    @app.job(name="plain")
    def plain(n: int) -> None: ...

    with global_tracer_provider(trace.NoOpTracerProvider()):
        h = plain.dispatch(1)
        assert "trace" not in json.loads(app.get_job(h.id).payload)
        assert [j.state for j in drain(app)] == ["succeeded"]


def test_the_api_imported_with_no_provider_set_makes_no_spans() -> None:
    """redis-py 8 imports opentelemetry for its metrics, so the API sits in sys.modules in
    every process that uses the Redis store: without a provider set, spans would all be
    non-recording, and tenure makes none. A provider set later is followed."""
    saved = (trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded)
    trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded = Once(), None, None
    provider = TracerProvider()
    try:
        assert tracing.API in sys.modules
        assert tracing._otel() is None
        trace.set_tracer_provider(provider)
        assert tracing._otel() is not None
    finally:
        provider.shutdown()
        trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, tracing._loaded = saved


def with_src(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])}


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=with_src(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tenure_works_when_opentelemetry_cannot_be_imported(tmp_path: Path) -> None:
    """A process where `import opentelemetry` fails: dispatch, batches, drain and the worker
    child's attempt all work, and a payload that does carry a trace context still runs."""
    proc = run_python(
        """
        import json, sys
        sys.modules["opentelemetry"] = None  # any import of it now raises ImportError
        try:
            import opentelemetry.trace
        except ImportError:
            pass
        else:
            raise SystemExit("opentelemetry was importable")

        import tenure
        from tenure.testing import drain
        from tenure.core.retry import Policy
        from tenure.core.records import Reservation
        from tenure.worker.execute import execute

        app = tenure.App("sqlite:///t.db")

        @app.job
        def work(n):
            return n

        h = work.dispatch(1)
        assert "trace" not in json.loads(app.get_job(h.id).payload)
        b = app.batch([work.sig(2), work.sig(3)], then=work.sig(4))
        assert sorted(j.state for j in drain(app)) == ["succeeded"] * 4
        assert app.get_batch(b.id).state == "succeeded"
        traced = '{"args":[5],"kwargs":{},"trace":{"traceparent":'
        traced += '"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}'
        res = Reservation(job_id="x", name="work", queue="default", payload=traced,
                          policy=Policy(), attempt=1, token=1, lease_expires_at=0.0)
        ended = execute(app, res, app.get_definition("work"))
        assert ended.outcome == "succeeded" and ended.result == "5", ended
        assert not any(m.startswith("opentelemetry.") for m in sys.modules), "imported it"
        print("ok")
        """,
        tmp_path,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_tenure_does_not_import_opentelemetry_itself(tmp_path: Path) -> None:
    """Installed is not used: a process that never imported it pays nothing, not the import."""
    proc = run_python(
        """
        import sys
        import tenure
        from tenure.testing import drain
        app = tenure.App("sqlite:///t.db")
        app.job(lambda: None, name="f")
        app.jobs["f"].dispatch()
        drain(app)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[]"


# -- a real worker process ---------------------------------------------------------------------
JOBS_MODULE = '''
"""Jobs whose worker exports its spans, one JSON object per line, to $SPANS_FILE."""
import os

import tenure

if os.environ.get("SPANS_FILE"):  # in the worker's processes only: the test has its own
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = open(os.environ["SPANS_FILE"], "a", encoding="utf-8")
    exporter = ConsoleSpanExporter(out=out, formatter=lambda s: s.to_json(indent=None) + "\\n")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

app = tenure.App(os.environ["STORE_URL"])


@app.job
def export_rows(lo: int, hi: int) -> None: ...


@app.job(tries=1)
def explode() -> None:
    raise RuntimeError("boom")


@app.job(tries=1)
async def fetch_page(url: str) -> None:
    if "missing" in url:
        raise LookupError(url)
'''


def load_jobs(directory: Path) -> Any:
    import importlib.util

    (directory / "traced_jobs.py").write_text(JOBS_MODULE)
    spec = importlib.util.spec_from_file_location("traced_jobs", directory / "traced_jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hex_ids(span: ReadableSpan) -> tuple[str, str]:
    trace_id, span_id = ids(span)
    return f"0x{trace_id:032x}", f"0x{span_id:016x}"


@pytest.mark.slow
def test_a_real_worker_links_its_attempts_to_the_dispatch_in_another_process(
    tmp_path: Path, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_url = f"sqlite:///{tmp_path / 'tenure.db'}"
    monkeypatch.setenv("STORE_URL", store_url)  # for the test's import and the worker's
    jobs = load_jobs(tmp_path)
    try:
        b = jobs.app.batch_over_ids(jobs.export_rows, 1, 20, chunk=5, slice_jobs=4)
        failing = jobs.explode.dispatch()
        fetched = jobs.fetch_page.dispatch("https://example.org/")
        jobs.fetch_page.dispatch("https://example.org/missing")
    finally:
        jobs.app.close()
    (created,) = named(spans, "dispatch batch")
    (dispatched,) = named(spans, "dispatch explode")
    async_dispatches = named(spans, "dispatch fetch_page")

    spans_file = tmp_path / "spans.jsonl"
    env = with_src({**os.environ, "SPANS_FILE": str(spans_file)})
    worker = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "traced_jobs:app", "--burst"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert tenure.App(store_url).get_batch(b.id).state == "succeeded"
    exported = [json.loads(line) for line in spans_file.read_text().splitlines()]

    def process(name: str) -> list[dict[str, Any]]:
        return [s for s in exported if s["name"] == f"process {name}"]

    def links(span: dict[str, Any]) -> list[tuple[str, str]]:
        return [(x["context"]["trace_id"], x["context"]["span_id"]) for x in span["links"]]

    (coordinator,) = process(COORDINATOR)
    assert coordinator["kind"] == "SpanKind.CONSUMER"
    assert links(coordinator) == [hex_ids(created)]  # across processes, through the store
    # the child's own dispatch of the ranges happened inside the coordinator's attempt
    (planned,) = [s for s in exported if s["name"] == "dispatch batch"]
    assert planned["parent_id"] == coordinator["context"]["span_id"]
    ranges = process("export_rows")
    assert len(ranges) == 4
    assert {links(s)[0] for s in ranges} == {
        (planned["context"]["trace_id"], planned["context"]["span_id"])
    }
    assert all(s["attributes"]["tenure.outcome"] == "succeeded" for s in ranges)

    (boom,) = process("explode")
    assert links(boom) == [hex_ids(dispatched)]
    assert boom["attributes"]["tenure.job.id"] == failing.id
    assert boom["attributes"]["tenure.outcome"] == "failed"
    assert boom["status"]["status_code"] == "ERROR"
    assert [e["name"] for e in boom["events"]] == ["exception"]

    # async jobs run on the worker's event loop, not in a child: same spans, same links
    fetches = {s["attributes"]["tenure.job.id"]: s for s in process("fetch_page")}
    assert len(fetches) == 2
    assert {links(s)[0] for s in fetches.values()} == {hex_ids(d) for d in async_dispatches}
    ok = fetches.pop(fetched.id)
    assert ok["attributes"]["tenure.outcome"] == "succeeded" and ok["kind"] == "SpanKind.CONSUMER"
    (missing,) = fetches.values()
    assert missing["attributes"]["tenure.outcome"] == "failed"
    assert missing["attributes"]["error.type"] == "LookupError"

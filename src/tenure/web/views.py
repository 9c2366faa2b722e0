"""What each page shows, computed from the Store API alone so the dashboard reads every backend
the same way. Plain dataclasses: the HTML templates and the JSON endpoints render the same data."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tenure.app import App
from tenure.control import WORKER_GONE_AFTER_S
from tenure.core import causes, payload
from tenure.core.records import AttemptRecord, BatchRecord, JobRecord, WorkerRecord
from tenure.core.words import clock_text
from tenure.describe import (
    OUTCOME_WORDS,
    ChainStop,
    arguments_text,
    chain_lines,
    chain_stops,
    describe_attempt,
    describe_job,
    result_text,
)
from tenure.rolling import Unknown
from tenure.stores.base import total_counts

# Rates are measured over the last few minutes of samples this process took.
RATE_WINDOW_S = 300.0
LIVE_STATES = ("queued", "scheduled", "running")


@dataclass(frozen=True)
class QueueRow:
    name: str
    waiting: int
    scheduled: int
    running: int
    failed: int
    succeeded: int
    per_minute: float | None  # jobs finished per minute, None until two samples exist
    oldest_ready_age: float | None = None  # seconds the oldest ready job has waited
    paused: bool = False
    on_keys: int = 0  # of `waiting`: parked by a concurrency key (not ready)


@dataclass(frozen=True)
class WorkerRow:
    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    started_at: float
    last_seen_at: float
    seen_ago_s: float
    alive: bool


@dataclass(frozen=True)
class Overview:
    now: float
    counts: dict[str, int]
    queues: list[QueueRow]
    workers: list[WorkerRow]
    active: bool
    # rolling deploys: per queue, the waiting jobs no live worker serving it knows
    unknown: list[Unknown] = field(default_factory=list)

    @property
    def unknown_count(self) -> int:
        return sum(u.count for u in self.unknown)


class RateMeter:
    """Finished-job rates from successive count samples taken by this dashboard process.

    The Store API has no "finished per minute" query; two samples of the finished counts a few
    seconds apart give it without scanning attempts. Forgetting jobs lowers a count: that
    window restarts instead of reporting a negative rate."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def observe(self, key: str, at: float, finished: int) -> float | None:
        with self._lock:
            samples = self._samples.setdefault(key, deque())
            if samples and finished < samples[-1][1]:
                samples.clear()
            samples.append((at, finished))
            while len(samples) > 2 and at - samples[1][0] >= self.window_s:
                samples.popleft()
            first_at, first_n = samples[0]
            if at - first_at < 1.0:
                return None
            return (finished - first_n) / (at - first_at) * 60.0


def overview(app: App, meter: RateMeter) -> Overview:
    now = app.now()
    # Per-queue counts come from the store's counters or indexes (never a scan of the jobs), and
    # the totals are their sum: one read per refresh, and the two tables always agree.
    by_queue = app.queue_counts()
    counts = total_counts(by_queue)
    queues = []
    for name, c in sorted(by_queue.items()):
        finished = c.get("succeeded", 0) + c.get("failed", 0)
        queues.append(
            QueueRow(
                name=name,
                waiting=c.get("queued", 0),
                scheduled=c.get("scheduled", 0),
                running=c.get("running", 0),
                failed=c.get("failed", 0),
                succeeded=c.get("succeeded", 0),
                per_minute=meter.observe(name, time.monotonic(), finished),
                oldest_ready_age=c.oldest_ready_age,
                paused=c.paused,
                on_keys=c.waiting,
            )
        )
    workers = [
        worker_row(w, now)
        for w in app.workers()
        if w.stopped_at is None and now - w.last_seen_at < WORKER_GONE_AFTER_S
    ]
    active = counts.get("running", 0) > 0 or counts.get("queued", 0) > 0
    # only queues with jobs waiting: the scan costs nothing where none wait
    waiting = [q.name for q in queues if q.waiting or q.scheduled]
    unknown = app.unknown_waiting(waiting) if waiting and workers else []
    return Overview(now, counts, queues, workers, active, unknown)


def worker_row(w: WorkerRecord, now: float) -> WorkerRow:
    ago = max(0.0, now - w.last_seen_at)
    return WorkerRow(
        id=w.id,
        host=w.host,
        pid=w.pid,
        queues=w.queues,
        concurrency=w.concurrency,
        started_at=w.started_at,
        last_seen_at=w.last_seen_at,
        seen_ago_s=ago,
        alive=w.is_live(now),
    )


@dataclass(frozen=True)
class Callback:
    kind: str  # then | catch | finally
    job_id: str
    state: str  # the callback job's state, or "forgotten"
    error: str | None


@dataclass(frozen=True)
class BatchView:
    record: BatchRecord
    now: float
    settled: int  # done + failed + cancelled: what the bar shows against the declared total
    percent: float
    per_second: float | None
    eta_s: float | None
    callbacks: list[Callback] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.record.state == "running"

    @property
    def bar_value(self) -> float:
        """The bar follows the store's progress (monotonic, counts running members' own
        progress), measured in jobs of the declared total."""
        return round(self.record.progress * self.record.total, 1)


def batch_view(app: App, record: BatchRecord, now: float, *, callbacks: bool = True) -> BatchView:
    settled = record.done + record.failed + record.cancelled
    percent = round(record.progress * 100.0, 1)
    end = record.finished_at if record.finished_at is not None else now
    elapsed = max(end - record.created_at, 0.0)
    per_second = settled / elapsed if elapsed > 0.5 and settled else None
    eta = None
    if record.state == "running" and per_second:
        eta = record.pending / per_second
    found: list[Callback] = []
    if callbacks:
        for kind, job_id in (
            ("then", record.then_job_id),
            ("catch", record.catch_job_id),
            ("finally", record.finally_job_id),
        ):
            if job_id is None:
                continue
            job = app.find_job(job_id)
            state = job.state if job is not None else "forgotten"
            found.append(Callback(kind, job_id, state, job.last_error if job else None))
    return BatchView(record, now, settled, percent, per_second, eta, found)


@dataclass(frozen=True)
class Bar:
    """One attempt on the job's time axis; left and width are percentages of the axis."""

    number: int
    outcome: str  # an attempt outcome, or "running"
    words: str
    worker: str
    host: str
    pid: int
    started_at: float
    ended_at: float | None
    duration_s: float
    left: float
    width: float
    error: str | None
    traceback: str | None
    description: str
    cause: str | None = None  # who ended its process (tenure.core.causes)
    cause_words: str = ""


@dataclass(frozen=True)
class JobView:
    record: JobRecord
    now: float
    arguments: str
    encrypted: bool
    result: str | None  # the stored result as text, "(encrypted)" when sealed; None: none
    lines: list[str]
    bars: list[Bar]
    axis_start: float
    axis_end: float
    chain: list[ChainStop] = field(default_factory=list)  # [] outside any chain

    @property
    def active(self) -> bool:
        return self.record.state in LIVE_STATES

    @property
    def axis_span_s(self) -> float:
        return self.axis_end - self.axis_start

    @property
    def last_traceback(self) -> str | None:
        for bar in reversed(self.bars):
            if bar.traceback:
                return bar.traceback
        return None


def job_view(record: JobRecord, now: float, app: App | None = None) -> JobView:
    """`app` reads the other links of the job's chain, if it is in one."""
    attempts = record.attempts
    start = min((a.started_at for a in attempts), default=record.created_at)
    end = max((attempt_end(a, now) for a in attempts), default=start)
    span = max(end - start, 1e-3)
    bars = [_bar(a, now, start, span) for a in attempts]
    stops = chain_stops(record, app.find_job) if app is not None else []
    return JobView(
        record=record,
        now=now,
        arguments=arguments_text(record.payload, record.chain_text),
        encrypted=payload.is_encrypted(record.payload),
        result=None if record.result_text is None else result_text(record.result_text),
        lines=describe_job(record) + chain_lines(record, stops),
        bars=bars,
        axis_start=start,
        axis_end=start + span,
        chain=stops,
    )


def attempt_end(a: AttemptRecord, now: float) -> float:
    return a.ended_at if a.ended_at is not None else max(now, a.started_at)


def _bar(a: AttemptRecord, now: float, start: float, span: float) -> Bar:
    end = attempt_end(a, now)
    left = (a.started_at - start) / span * 100.0
    # A 2 ms attempt on a 10-minute axis must still be visible and clickable.
    width = max((end - a.started_at) / span * 100.0, 1.0)
    outcome = a.outcome or "running"
    return Bar(
        number=a.number,
        outcome=outcome,
        words=OUTCOME_WORDS.get(outcome, "is running"),
        worker=a.worker_id,
        host=a.host,
        pid=a.pid,
        started_at=a.started_at,
        ended_at=a.ended_at,
        duration_s=end - a.started_at,
        left=round(min(left, 99.0), 3),
        width=round(min(width, 100.0 - min(left, 99.0)), 3),
        error=a.error,
        traceback=a.traceback,
        description=describe_attempt(a),
        cause=a.cause,
        cause_words=causes.words(a.cause) if a.outcome != "succeeded" else "",
    )


# -- JSON shapes -----------------------------------------------------------------------------
def overview_json(o: Overview) -> dict[str, Any]:
    return {
        "now": o.now,
        "counts": o.counts,
        "queues": [q.__dict__ for q in o.queues],
        "workers": [{**w.__dict__, "queues": list(w.queues)} for w in o.workers],
        "active": o.active,
        # rolling deploys: waiting jobs no live worker serving their queue knows
        "unknown_jobs": o.unknown_count,
        "unknown": [
            {"queue": u.queue, "count": u.count, "names": list(u.names), "capped": u.capped}
            for u in o.unknown
        ],
    }


def batch_json(v: BatchView) -> dict[str, Any]:
    r = v.record
    return {
        "id": r.id,
        "name": r.name,
        "state": r.state,
        "total": r.total,
        "declared_total": r.declared_total,
        "jobs": r.jobs,
        "done": r.done,
        "failed": r.failed,
        "cancelled": r.cancelled,
        "pending": r.pending,
        "progress": r.progress,
        "created_at": r.created_at,
        "finished_at": r.finished_at,
        "per_second": v.per_second,
        "eta_seconds": v.eta_s,
        "callbacks": [c.__dict__ for c in v.callbacks],
    }


def job_summary_json(r: JobRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "queue": r.queue,
        "state": r.state,
        "created_at": r.created_at,
        "finished_at": r.finished_at,
        "tries_used": r.tries_used,
        "last_error": r.last_error,
        "batch_id": r.batch_id,
    }


def job_json(v: JobView) -> dict[str, Any]:
    # The raw payload never leaves the store: arguments as text, "(encrypted)" when sealed.
    return {
        **job_summary_json(v.record),
        "arguments": v.arguments,
        "encrypted": v.encrypted,
        "result": v.result,
        "tries": v.record.policy.tries,
        "timeout": v.record.policy.timeout,
        "description": v.lines,
        "attempts": [
            {k: val for k, val in b.__dict__.items() if k not in ("left", "width")} for b in v.bars
        ],
        "chain": [stop.__dict__ for stop in v.chain],
    }


def ago_text(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return "just now"
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def when_text(epoch: float | None) -> str:
    return clock_text(epoch) if epoch is not None else "—"

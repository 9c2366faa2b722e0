"""Prometheus metrics for one worker, served as text on --metrics-port (no extra dependency).

Counters live in the supervisor, so they count what this worker did; the job counts per state,
each queue's oldest ready job's age and whether it is paused are read from the store at scrape
time, so every worker reports the same queue depth and wait.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tenure.core.records import QueueCounts
from tenure.stores.base import total_counts

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.attempts: Counter[tuple[str, str]] = Counter()  # (job, outcome)
        self.crashes: Counter[tuple[str, str]] = Counter()  # (job, cause) of crashed attempts
        self.duration_buckets: Counter[tuple[str, float]] = Counter()
        self.duration_sum: dict[str, float] = {}
        self.duration_count: Counter[str] = Counter()
        self.lease_renewals = 0
        self.lease_renewal_failures = 0
        self.leases_lost = 0

    def attempt_ended(
        self, job: str, outcome: str, seconds: float, cause: str | None = None
    ) -> None:
        with self._lock:
            self.attempts[(job, outcome)] += 1
            if outcome == "crashed":
                self.crashes[(job, cause or "unknown")] += 1
            self.duration_sum[job] = self.duration_sum.get(job, 0.0) + seconds
            self.duration_count[job] += 1
            # one increment per attempt (the smallest bucket that holds it); the cumulative
            # counts Prometheus expects are summed at scrape time, not on the hot path
            first = bisect.bisect_left(BUCKETS, seconds)
            if first < len(BUCKETS):
                self.duration_buckets[(job, BUCKETS[first])] += 1

    def renewed(self, ok: bool, leases: int) -> None:
        with self._lock:
            if ok:
                self.lease_renewals += leases
            else:
                self.lease_renewal_failures += 1

    def lease_lost(self) -> None:
        with self._lock:
            self.leases_lost += 1

    def _histogram(self, job: str) -> list[str]:
        name = "tenure_attempt_duration_seconds"
        label = f'job="{_esc(job)}"'
        out = []
        cumulative = 0
        for bound in BUCKETS:
            cumulative += self.duration_buckets[(job, bound)]
            out.append(f'{name}_bucket{{{label},le="{bound}"}} {cumulative}')
        count = self.duration_count[job]
        out.append(f'{name}_bucket{{{label},le="+Inf"}} {count}')
        out.append(f"{name}_sum{{{label}}} {self.duration_sum[job]:.6f}")
        out.append(f"{name}_count{{{label}}} {count}")
        return out

    def render(self, running: int, by_queue: Mapping[str, QueueCounts] | None) -> str:
        with self._lock:
            lines = [
                "# HELP tenure_attempts_total Attempts this worker ended, by job and outcome.",
                "# TYPE tenure_attempts_total counter",
            ]
            lines += [
                f'tenure_attempts_total{{job="{_esc(j)}",outcome="{o}"}} {n}'
                for (j, o), n in sorted(self.attempts.items())
            ]
            lines += [
                "# HELP tenure_crashes_total Attempts that crashed, by job and cause "
                "(tenure.core.causes: oom_kill, sigkill, memory_cap, fault, ...).",
                "# TYPE tenure_crashes_total counter",
            ]
            lines += [
                f'tenure_crashes_total{{job="{_esc(j)}",cause="{_esc(c)}"}} {n}'
                for (j, c), n in sorted(self.crashes.items())
            ]
            lines += [
                "# HELP tenure_attempt_duration_seconds How long attempts ran.",
                "# TYPE tenure_attempt_duration_seconds histogram",
            ]
            for job in sorted(self.duration_count):
                lines += self._histogram(job)
            lines += [
                "# TYPE tenure_lease_renewals_total counter",
                f"tenure_lease_renewals_total {self.lease_renewals}",
                "# TYPE tenure_lease_renewal_failures_total counter",
                f"tenure_lease_renewal_failures_total {self.lease_renewal_failures}",
                "# TYPE tenure_leases_lost_total counter",
                f"tenure_leases_lost_total {self.leases_lost}",
                "# HELP tenure_running Attempts running on this worker now.",
                "# TYPE tenure_running gauge",
                f"tenure_running {running}",
            ]
        if by_queue is not None:
            lines += queue_lines(by_queue)
        return "\n".join(lines) + "\n"


def queue_lines(by_queue: Mapping[str, QueueCounts]) -> list[str]:
    """The store's gauges: jobs by state, and per queue its wait and whether it is paused."""
    counts = total_counts(by_queue)
    lines = ["# HELP tenure_jobs Jobs in the store by state.", "# TYPE tenure_jobs gauge"]
    lines += [f'tenure_jobs{{state="{s}"}} {n}' for s, n in sorted(counts.items())]
    lines += [
        "# HELP tenure_queue_oldest_ready_seconds How long the queue's oldest ready job has "
        "waited (store clock); 0 when none is ready.",
        "# TYPE tenure_queue_oldest_ready_seconds gauge",
    ]
    lines += [
        f'tenure_queue_oldest_ready_seconds{{queue="{_esc(q)}"}} {c.oldest_ready_age or 0:.3f}'
        for q, c in sorted(by_queue.items())
    ]
    lines += [
        "# HELP tenure_queue_paused 1 while the queue is paused (tenure queue pause).",
        "# TYPE tenure_queue_paused gauge",
    ]
    lines += [
        f'tenure_queue_paused{{queue="{_esc(q)}"}} {int(c.paused)}'
        for q, c in sorted(by_queue.items())
    ]
    lines += [
        "# HELP tenure_queue_waiting_on_keys Queued jobs of the queue parked by their "
        "concurrency key until a running one of the key ends.",
        "# TYPE tenure_queue_waiting_on_keys gauge",
    ]
    lines += [
        f'tenure_queue_waiting_on_keys{{queue="{_esc(q)}"}} {c.waiting}'
        for q, c in sorted(by_queue.items())
    ]
    return lines


def serve(port: int, host: str, page: Callable[[], str]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "metrics are at /metrics")
                return
            body = page().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # scrapes are not news
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tenure-metrics", daemon=True).start()
    return server


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')

"""The worker's Prometheus page: histogram buckets are cumulative, as Prometheus reads them."""

from __future__ import annotations

import re

from tenure.core.records import QueueCounts
from tenure.worker.metrics import BUCKETS, Metrics


def _buckets(page: str, job: str) -> dict[str, int]:
    pattern = rf'tenure_attempt_duration_seconds_bucket\{{job="{job}",le="([^"]+)"\}} (\d+)'
    return {le: int(n) for le, n in re.findall(pattern, page)}


def test_each_bucket_counts_every_attempt_at_or_below_its_bound() -> None:
    metrics = Metrics()
    durations = [0.001, 0.005, 0.006, 0.3, 2.0, 2.0, 400.0]
    for seconds in durations:
        metrics.attempt_ended("export", "succeeded", seconds)

    got = _buckets(metrics.render(0, None), "export")

    expected = {str(b): sum(d <= b for d in durations) for b in BUCKETS}
    assert got == {**expected, "+Inf": len(durations)}
    assert 'tenure_attempt_duration_seconds_count{job="export"} 7' in metrics.render(0, None)


def test_jobs_have_separate_histograms() -> None:
    metrics = Metrics()
    metrics.attempt_ended("a", "succeeded", 0.02)
    metrics.attempt_ended("b", "failed", 20.0)
    page = metrics.render(1, None)
    assert _buckets(page, "a")["0.025"] == 1 and _buckets(page, "b")["0.025"] == 0
    assert _buckets(page, "b")["30"] == 1


def test_each_queue_has_its_wait_and_paused_gauges() -> None:
    by_queue = {
        "mail": QueueCounts(
            {"queued": 3, "running": 1}, oldest_ready_age=12.5, paused=True, waiting=2
        ),
        'odd "q"': QueueCounts({"succeeded": 2}),
    }
    page = Metrics().render(0, by_queue)
    assert 'tenure_jobs{state="queued"} 3' in page
    assert 'tenure_jobs{state="succeeded"} 2' in page
    assert 'tenure_queue_oldest_ready_seconds{queue="mail"} 12.500' in page
    assert 'tenure_queue_oldest_ready_seconds{queue="odd \\"q\\""} 0.000' in page
    assert 'tenure_queue_paused{queue="mail"} 1' in page
    assert 'tenure_queue_paused{queue="odd \\"q\\""} 0' in page
    assert "# TYPE tenure_queue_paused gauge" in page
    assert 'tenure_queue_waiting_on_keys{queue="mail"} 2' in page
    assert 'tenure_queue_waiting_on_keys{queue="odd \\"q\\""} 0' in page

"""A worker is live when it has not stopped and was seen within WORKER_SILENT_AFTER_S: one rule
(WorkerRecord.is_live) that `tenure workers`, the dashboard, App.live_workers and the
rolling-deploy hand-back all read, so none of them can call a worker live that another calls
silent."""

from __future__ import annotations

from dataclasses import replace

from tenure.cli.workers import status
from tenure.core.records import WORKER_SILENT_AFTER_S, WorkerRecord
from tenure.web.views import worker_row

SEEN = 1000.0
W = WorkerRecord("w1", "h", 1, ("default",), 1, started_at=900.0, last_seen_at=SEEN)


def test_live_until_a_full_silence_has_passed_since_it_was_last_seen() -> None:
    assert W.is_live(SEEN)
    assert W.is_live(SEEN + WORKER_SILENT_AFTER_S - 0.001)
    assert not W.is_live(SEEN + WORKER_SILENT_AFTER_S)
    assert not W.is_live(SEEN + 3 * WORKER_SILENT_AFTER_S)


def test_a_stopped_worker_is_never_live_however_recent_its_heartbeat() -> None:
    stopped = replace(W, stopped_at=SEEN)
    assert not stopped.is_live(SEEN)
    # stopping (a SIGTERM received, attempts still running) is still live: it holds jobs
    assert replace(W, stopping_at=SEEN).is_live(SEEN)


def test_the_cli_and_the_dashboard_agree_with_the_rule_at_its_edge() -> None:
    edge = SEEN + WORKER_SILENT_AFTER_S
    for now, live in ((edge - 0.001, True), (edge, False)):
        assert status(W, now) == ("live" if live else "silent")
        assert worker_row(W, now).alive is live
    assert status(replace(W, stopped_at=SEEN), SEEN) == "stopped"

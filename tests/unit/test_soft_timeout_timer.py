"""The worker child's soft-timeout timer (worker.execute.SoftTimeout): armed for the attempt's
timeout when a job's code starts (execute's soft_timeout), left armed at its end (the next
attempt arms it again, one system call a job), and disarmed when the child holds no next
attempt, so an idle child is not woken."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import tenure
from tenure.core.records import Reservation
from tenure.core.retry import Policy
from tenure.worker.execute import SUCCEEDED, SoftTimeout, execute


@pytest.fixture
def timer() -> Iterator[None]:
    before = signal.signal(signal.SIGALRM, lambda *_: None)  # never the default (it kills)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        SoftTimeout.running = False


def remaining() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


def attempt(timeout: float) -> Reservation:
    return Reservation("j1", "look", "default", '{"args":[]}', Policy(timeout=timeout), 1, 1, 0.0)


def test_a_job_s_code_runs_under_its_own_deadline_and_its_end_clears_running(
    timer: None, tmp_path: Path
) -> None:
    app = tenure.App(f"sqlite:///{tmp_path}/t.db")
    seen: list[tuple[bool, float]] = []

    @app.job
    def look() -> None:
        seen.append((SoftTimeout.running, remaining()))

    assert execute(app, attempt(1000.0), look, soft_timeout=True) is SUCCEEDED
    assert not SoftTimeout.running  # the handler ignores a signal from here on
    assert 990 < remaining() <= 1000  # left armed: the next attempt arms it again
    # the next attempt's own deadline, not the previous one's
    assert execute(app, attempt(500.0), look, soft_timeout=True) is SUCCEEDED
    (first_running, first), (second_running, second) = seen
    assert first_running and second_running
    assert 990 < first <= 1000 and 490 < second <= 500


def test_without_soft_timeout_no_timer_is_armed(timer: None, tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path}/t.db")
    seen: list[tuple[bool, float]] = []

    @app.job
    def look() -> None:
        seen.append((SoftTimeout.running, remaining()))

    execute(app, attempt(1000.0), look)
    ((running, left),) = seen
    assert not running and left < 990  # (pytest-timeout may hold the timer: not 0)


def test_disarm_stops_the_timer(timer: None) -> None:
    signal.setitimer(signal.ITIMER_REAL, 1000.0)
    SoftTimeout.running = True
    SoftTimeout.disarm()
    assert not SoftTimeout.running and remaining() == 0

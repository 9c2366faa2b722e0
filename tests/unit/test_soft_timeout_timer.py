"""The worker child's soft-timeout timer (worker.execute.SoftTimeout): armed when a job's code
starts, left armed at its end (the next attempt arms it again, one system call a job), and
disarmed when the child holds no next attempt, so an idle child is not woken."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tenure.worker.execute import SoftTimeout


@pytest.fixture
def timer() -> Iterator[None]:
    before = signal.signal(signal.SIGALRM, lambda *_: None)  # never the default (it kills)
    SoftTimeout.seconds = 1000.0
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        SoftTimeout.running = False


def remaining() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


def test_the_end_of_a_job_clears_running_and_the_next_start_arms_again(timer: None) -> None:
    SoftTimeout.bracket(True)
    assert SoftTimeout.running and 990 < remaining() <= 1000
    SoftTimeout.bracket(False)
    assert not SoftTimeout.running  # the handler ignores a signal from here on
    SoftTimeout.seconds = 500.0
    SoftTimeout.bracket(True)  # the next attempt's own deadline, not the previous one's
    assert 490 < remaining() <= 500


def test_disarm_stops_the_timer(timer: None) -> None:
    SoftTimeout.bracket(True)
    SoftTimeout.disarm()
    assert not SoftTimeout.running and remaining() == 0

"""What a --burst worker says it leaves behind (pure: the numbers come from the store)."""

from __future__ import annotations

from tenure.worker.burst import Leftover


def test_leftover_names_counts_kinds_and_the_next_due_time() -> None:
    left = Leftover(retries=1, delayed=2, next_due_at=1_000_030.0, running_elsewhere=1, now=1e6)
    text = left.describe()
    assert text.startswith("left: 3 scheduled (1 retry, 2 delayed, the next due in 30 s at ")
    assert text.endswith("; 1 running on other live workers")
    assert not left.empty


def test_nothing_left_says_so() -> None:
    left = Leftover(retries=0, delayed=0, next_due_at=None, running_elsewhere=0, now=0.0)
    assert left.describe() == "nothing is scheduled or running"
    assert left.empty


def test_ready_jobs_in_a_paused_queue_are_named() -> None:
    left = Leftover(0, 0, None, 0, 0.0, paused_ready={"mail": 3})
    assert not left.empty
    assert left.describe() == "left: 3 ready in paused queue 'mail' (`tenure queue resume mail`)"

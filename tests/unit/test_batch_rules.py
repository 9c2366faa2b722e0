"""Batch rules are pure: counts, callbacks and progress, tested without a store."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tenure import ranges
from tenure.core.batch import (
    BatchCounts,
    cancelled_by_user,
    count_ranges,
    member_ended,
    member_retried,
    progress,
    queued_members_cancelled,
    settle,
)


def test_all_members_succeed_then_and_finally_once() -> None:
    counts = BatchCounts(jobs=2)
    first = member_ended(counts, "succeeded")
    assert first.callbacks == ()
    last = member_ended(first.counts, "succeeded")
    assert last.callbacks == ("then", "finally")
    assert last.counts.state == "succeeded" and last.counts.finished
    assert settle(last.counts).callbacks == ()  # never twice


def test_first_failure_sends_catch_and_stops_queued_members() -> None:
    change = member_ended(BatchCounts(jobs=5), "failed")
    assert change.callbacks == ("catch",) and change.cancel_queued
    assert change.counts.state == "failed"
    rest = queued_members_cancelled(change.counts, 3)
    assert rest.callbacks == ()  # one member still running
    end = member_ended(rest.counts, "succeeded")
    assert end.callbacks == ("finally",) and end.counts.state == "failed"


def test_allowed_failures_still_run_then() -> None:
    change = member_ended(BatchCounts(jobs=2, allow_failures=True), "failed")
    assert change.callbacks == ("catch",) and not change.cancel_queued
    end = member_ended(change.counts, "succeeded")
    assert end.callbacks == ("then", "finally") and end.counts.state == "succeeded"


def test_cancel_runs_finally_only_when_nothing_is_outstanding() -> None:
    change = cancelled_by_user(BatchCounts(jobs=3, done=1))
    assert change.counts.state == "cancelled" and change.cancel_queued
    assert queued_members_cancelled(change.counts, 2).callbacks == ("finally",)
    assert cancelled_by_user(change.counts).callbacks == ()


def test_a_retried_member_leaves_the_failed_count_only_while_the_batch_runs() -> None:
    failed = member_ended(BatchCounts(jobs=2, allow_failures=True), "failed").counts
    back = member_retried(failed)
    assert back is not None and (back.failed, back.outstanding, back.catch_sent) == (0, 2, True)
    again = member_ended(back, "failed")
    assert again.counts.failed == 1 and again.callbacks == ()  # counted once, no second catch
    # a batch that failed, was cancelled or settled has acted on its end: refused
    stopped = member_ended(BatchCounts(jobs=2), "failed").counts
    assert stopped.state == "failed" and member_retried(stopped) is None
    settled = member_ended(again.counts, "succeeded").counts
    assert settled.finished and member_retried(settled) is None
    assert member_retried(cancelled_by_user(failed).counts) is None


def test_empty_batch_finishes_at_once() -> None:
    assert settle(BatchCounts()).callbacks == ("then", "finally")


@given(st.lists(st.sampled_from(["succeeded", "failed", "partial"]), max_size=60))
def test_progress_against_a_declared_total_never_goes_back(events: list[str]) -> None:
    total = len(events) + 5
    counts = BatchCounts(jobs=total, allow_failures=True)
    partial, last = 0.0, 0.0
    for event in events:
        if event == "partial":
            partial = min(1.0, partial + 0.5)
        else:
            counts = member_ended(counts, event).counts
            partial = 0.0
        now = progress(counts, total, partial)
        assert now >= last
        last = now


def test_progress_without_a_declared_total_is_the_share_settled() -> None:
    assert progress(BatchCounts(jobs=4, done=1), None, 0.0) == 0.25
    assert progress(BatchCounts(jobs=0), None, 0.0) == 0.0


@given(st.integers(-50, 50), st.integers(-50, 500), st.integers(1, 60))
def test_ranges_cover_each_id_once(lo: int, hi: int, size: int) -> None:
    got = list(ranges(lo, hi, size))
    ids = [i for a, b in got for i in range(a, b + 1)]
    assert ids == list(range(lo, hi + 1))
    assert all(b - a + 1 <= size for a, b in got)
    assert len(got) == count_ranges(lo, hi, size)


def test_ranges_example_from_the_design() -> None:
    assert list(ranges(1, 120, 50)) == [(1, 50), (51, 100), (101, 120)]

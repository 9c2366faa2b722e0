"""The retry decision is pure: every backend calls it, so it is tested once, here."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenure.core.errors import ConfigError
from tenure.core.retry import (
    HANDED_BACK_DELAY_S,
    Counters,
    Policy,
    backoff_delay,
    decide,
    validate_policy,
)


def test_exception_uses_a_try_and_schedules_the_backoff() -> None:
    d = decide(Policy(tries=3, backoff=10), Counters(), "failed", now=100.0)
    assert d.retry and d.delay == 10.0
    assert d.counters == Counters(tries_used=1, exceptions=1)


def test_last_try_fails_with_the_reason() -> None:
    d = decide(Policy(tries=2, backoff=0), Counters(1, 1), "failed", now=0.0)
    assert not d.retry
    assert d.reason == "it used all 2 tries"


@pytest.mark.parametrize("outcome", ["interrupted", "lost_lease"])
def test_free_outcomes_requeue_at_once_without_using_a_try(outcome: str) -> None:
    d = decide(Policy(tries=1, max_exceptions=1), Counters(0, 0), outcome, now=0.0)
    assert d.retry and d.delay == 0.0 and d.counters == Counters(0, 0)


def test_a_hand_back_requeues_a_little_later_without_using_a_try() -> None:
    """A worker that cannot run the job (rolling deploy) must not get it back at once."""
    d = decide(Policy(tries=1, max_exceptions=1), Counters(0, 0), "deferred", now=0.0)
    assert d.retry and d.delay == HANDED_BACK_DELAY_S > 0 and d.counters == Counters(0, 0)


def test_crashes_count_toward_max_exceptions_unless_switched_off() -> None:
    policy = Policy(tries=None, retry_until=10_000.0, max_exceptions=2, backoff=0)
    first = decide(policy, Counters(), "crashed", now=0.0)
    assert first.retry
    second = decide(policy, first.counters, "crashed", now=0.0)
    assert not second.retry and "max_exceptions=2" in second.reason
    lenient = Policy(
        tries=None, retry_until=10_000.0, max_exceptions=2, backoff=0, count_crashes=False
    )
    d = decide(lenient, Counters(5, 1), "crashed", now=0.0)
    assert d.retry and d.counters == Counters(6, 1)


def test_timeouts_count_and_fail_on_timeout_fails_at_once() -> None:
    d = decide(Policy(fail_on_timeout=True), Counters(), "timed_out", now=0.0)
    assert not d.retry and "fail_on_timeout" in d.reason
    d = decide(Policy(max_exceptions=1), Counters(), "timed_out", now=0.0)
    assert not d.retry


def test_permanent_errors_never_retry() -> None:
    assert not decide(Policy(tries=5), Counters(), "failed", 0.0, permanent=True).retry


def test_deadline_stops_retries_that_would_start_after_it() -> None:
    policy = Policy(tries=None, retry_until=100.0, backoff=30)
    assert decide(policy, Counters(), "failed", now=60.0).retry
    late = decide(policy, Counters(), "failed", now=80.0)
    assert not late.retry and "retry_until" in late.reason


def test_list_backoff_repeats_its_last_step() -> None:
    assert [backoff_delay([10, 30, 120], n) for n in (1, 2, 3, 4, 9)] == [10, 30, 120, 120, 120]


@given(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=2**32))
def test_exponential_backoff_stays_within_its_step(tries_used: int, seed: int) -> None:
    delay = backoff_delay("exponential", tries_used, random.Random(seed))
    step = min(3600.0, 2.0**tries_used)
    assert step / 2 <= delay <= step


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (Policy(tries=None), "needs retry_until"),
        (Policy(tries=0), "tries: expected"),
        (Policy(timeout=0), "timeout: expected"),
        (Policy(backoff="linear"), "backoff: expected 'exponential'"),
        (Policy(backoff=[]), "backoff: expected"),
        (Policy(backoff=-1), "backoff: expected seconds >= 0"),
        (Policy(max_exceptions=0), "max_exceptions"),
    ],
)
def test_invalid_policies_are_refused_with_expected_and_got(policy: Policy, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_policy(policy)


def test_policy_round_trips_and_survives_damage() -> None:
    p = Policy(timeout=5, tries=None, retry_until=12.5, backoff=[1, 2], max_exceptions=2)
    assert Policy.from_json(p.to_json()) == p
    assert Policy.from_json("{broken") == Policy()
    assert Policy.from_json('{"timeout": 3, "unknown": 1}') == Policy(timeout=3)

"""Retry policy and the decision taken after each attempt: pure functions of (state, now).

Every store calls `decide` inside the same transaction that records the attempt's end, so the
rule is written once and the backends cannot disagree about it.
"""

from __future__ import annotations

import functools
import json
import math
import random
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tenure.core.errors import ConfigError
from tenure.core.states import FREE_OUTCOMES

Backoff = int | float | list[float] | str

EXPONENTIAL_CAP_S = 3600.0


@dataclass(frozen=True)
class Policy:
    """How a job is retried. Stored with the job, so a re-run obeys the rules it was sent with."""

    timeout: float = 60.0
    kill_after: float = 5.0
    tries: int | None = 3
    backoff: Backoff = "exponential"
    retry_until: float | None = None  # epoch seconds on the store's clock
    max_exceptions: int | None = None
    count_crashes: bool = True
    fail_on_timeout: bool = False

    @functools.cached_property
    def text(self) -> str:
        """The policy as stored (JSON), made once per policy object: every dispatch stores
        its job's policy and every reservation hands it on, so the hot paths read `text`
        (after its first use, an attribute of the object) instead of encoding it again."""
        return _policy_json(self)

    def to_json(self) -> str:
        return self.text

    @classmethod
    def from_json(cls, text: str) -> Policy:
        return parse_policy(text)

    @classmethod
    def _parse(cls, text: str) -> Policy:
        # A damaged policy must not stop a worker: fall back to the defaults, which are safe.
        try:
            data: dict[str, Any] = json.loads(text)
            known = {k: v for k, v in data.items() if k in _SETTINGS}
            policy = cls(**known)
            validate_policy(policy)
            return policy
        except (TypeError, ValueError, AttributeError, RecursionError):
            return cls()


def _policy_json(policy: Policy) -> str:
    return json.dumps(asdict(policy), separators=(",", ":"))


# Every reservation parses its job's policy and most jobs share a handful: the hot paths call
# this cache directly (a hit is a dictionary lookup).
parse_policy = functools.lru_cache(maxsize=1024)(Policy._parse)
_SETTINGS = frozenset(f.name for f in fields(Policy))


def validate_policy(policy: Policy) -> None:
    """Reject settings that cannot work, with an 'expected X, got Y' message."""
    if not _seconds(policy.timeout) or policy.timeout <= 0:
        raise ConfigError(f"timeout: expected seconds > 0, got {policy.timeout!r}")
    if not _seconds(policy.kill_after) or policy.kill_after < 0:
        raise ConfigError(f"kill_after: expected seconds >= 0, got {policy.kill_after!r}")
    for name in ("tries", "max_exceptions"):
        value = getattr(policy, name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ConfigError(f"{name}: expected an int, got {value!r}")
    if policy.retry_until is not None and not _seconds(policy.retry_until):
        raise ConfigError(f"retry_until: expected a time, got {policy.retry_until!r}")
    if policy.tries is not None and policy.tries < 1:
        raise ConfigError(f"tries: expected an int >= 1 or None (unlimited), got {policy.tries!r}")
    if policy.tries is None and policy.retry_until is None:
        raise ConfigError(
            "tries=None (unlimited) needs retry_until=, a deadline after which the job stops; "
            "without it a job that always fails would run forever"
        )
    if policy.max_exceptions is not None and policy.max_exceptions < 1:
        raise ConfigError(f"max_exceptions: expected an int >= 1, got {policy.max_exceptions!r}")
    validate_backoff(policy.backoff)


def _seconds(value: object) -> bool:
    """A real, finite number of seconds (NaN would make a timeout that never fires)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validate_backoff(backoff: Backoff) -> None:
    if isinstance(backoff, bool):
        raise ConfigError(f"backoff: expected seconds, a list or 'exponential', got {backoff!r}")
    if isinstance(backoff, int | float):
        if backoff < 0:
            raise ConfigError(f"backoff: expected seconds >= 0, got {backoff!r}")
        return
    if isinstance(backoff, str):
        if backoff != "exponential":
            raise ConfigError(f"backoff: expected 'exponential', got {backoff!r}")
        return
    if (
        isinstance(backoff, list)
        and backoff
        and all(isinstance(x, int | float) and not isinstance(x, bool) and x >= 0 for x in backoff)
    ):
        return
    raise ConfigError(
        f"backoff: expected seconds, a non-empty list of seconds or 'exponential', got {backoff!r}"
    )


def backoff_delay(backoff: Backoff, tries_used: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before the next try, after `tries_used` counted tries (>= 1)."""
    n = max(tries_used, 1)
    if isinstance(backoff, int | float):
        return float(backoff)
    if isinstance(backoff, list):
        return float(backoff[min(n - 1, len(backoff) - 1)])
    # Exponential with jitter: 2, 4, 8 ... s (capped), each drawn from [50%, 100%] of its step
    # so that a crowd of jobs failing together does not come back together.
    step = min(EXPONENTIAL_CAP_S, 2.0**n)
    draw = (rng or random).uniform(0.5, 1.0)
    return step * draw


@dataclass(frozen=True)
class Counters:
    tries_used: int = 0  # attempts that used a try (everything but interrupted/lost_lease/deferred)
    exceptions: int = 0  # what max_exceptions counts: exceptions, timeouts, crashes (see policy)


@dataclass(frozen=True)
class Decision:
    """What happens to a job after an attempt ended without success."""

    retry: bool
    delay: float
    counters: Counters
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    cancel: bool = False  # the job ends `cancelled` (asked for by a person), not failed


def cancelled_ending(outcome: str, error: str) -> tuple[str, str]:
    """The attempt record of a job cancelled while it ran: outcome `cancelled` however the
    attempt ended (the worker stopped it, or it crashed or raised while being stopped), with
    what actually happened kept in the error."""
    if outcome == "cancelled":
        return outcome, error
    return "cancelled", f"cancelled while it ran; the attempt ended {outcome}: {error}"


# How long a job handed back by a worker that cannot run it waits before it is reserved again.
HANDED_BACK_DELAY_S = 5.0


def decide(
    policy: Policy,
    counters: Counters,
    outcome: str,
    now: float,
    *,
    permanent: bool = False,
    cancel_requested: bool = False,
    rng: random.Random | None = None,
    snooze: float = 0.0,
) -> Decision:
    """Retry or fail after an attempt that ended with `outcome` (anything but succeeded).

    `permanent` marks errors no retry can fix (unknown job name, corrupt payload).
    `cancel_requested`: someone cancelled the job while it ran (app.cancel): however the
    attempt ended, the job is cancelled, with no try used and no retry.
    """
    if cancel_requested:
        return Decision(False, 0.0, counters, "it was cancelled while it ran", cancel=True)
    if outcome == "cancelled":
        # A stop nobody asked for (a signal meant for the attempt before it): the job's fault
        # it is not, so it goes back at once, like a hand-back.
        return Decision(True, 0.0, counters, "stopped by a cancel meant for another attempt")
    if outcome == "deferred" and snooze > 0:
        # The job put itself off (tenure.Snooze): back after that long, no try used.
        return Decision(True, snooze, counters, f"snoozed for {snooze:g} s; no try used")
    if outcome == "deferred":
        # Handed back at its end by a worker that cannot run it (a rolling deploy's unknown
        # name): not now, and not here; a while later, so that it does not loop on that worker.
        return Decision(True, HANDED_BACK_DELAY_S, counters, "handed back; no try used")
    if outcome in FREE_OUTCOMES:
        # Not the job's fault (a deploy, a lost lease): hand it back at once, no try used.
        return Decision(retry=True, delay=0.0, counters=counters, reason=f"{outcome}; requeued")

    counts_as_exception = outcome != "crashed" or policy.count_crashes
    new = Counters(
        tries_used=counters.tries_used + 1,
        exceptions=counters.exceptions + (1 if counts_as_exception else 0),
    )
    if permanent:
        return Decision(False, 0.0, new, "the error is permanent; retrying cannot fix it")
    if outcome == "timed_out" and policy.fail_on_timeout:
        return Decision(False, 0.0, new, "it timed out and fail_on_timeout is set")
    if policy.max_exceptions is not None and new.exceptions >= policy.max_exceptions:
        what = "exceptions, timeouts and crashes" if policy.count_crashes else "exceptions"
        return Decision(
            False,
            0.0,
            new,
            f"it reached max_exceptions={policy.max_exceptions} "
            f"({new.exceptions} {what}; this attempt {outcome.replace('_', ' ')})",
        )
    if policy.tries is not None and new.tries_used >= policy.tries:
        return Decision(False, 0.0, new, f"it used all {policy.tries} tries")
    delay = backoff_delay(policy.backoff, new.tries_used, rng)
    if policy.retry_until is not None and now + delay >= policy.retry_until:
        return Decision(False, 0.0, new, "its retry_until deadline has passed")
    tries_text = "unlimited" if policy.tries is None else f"{new.tries_used} of {policy.tries}"
    return Decision(True, delay, new, f"retrying in {delay:.0f} s (tries used: {tries_text})")

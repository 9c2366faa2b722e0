"""Job states and attempt outcomes: the vocabulary every store and screen shares."""

from __future__ import annotations

from typing import Final, Literal, get_args

JobState = Literal["queued", "scheduled", "running", "succeeded", "failed", "cancelled"]
Outcome = Literal[
    "succeeded",
    "failed",
    "timed_out",
    "crashed",
    "interrupted",
    "lost_lease",
    "deferred",
    "cancelled",  # app.cancel / `tenure jobs cancel` stopped it: no try used, never retried
]

QUEUED: Final = "queued"
SCHEDULED: Final = "scheduled"  # queued, but not before run_at; derived, never stored
RUNNING: Final = "running"
SUCCEEDED: Final = "succeeded"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"

JOB_STATES: Final[tuple[str, ...]] = (QUEUED, SCHEDULED, RUNNING, SUCCEEDED, FAILED, CANCELLED)
FINAL_STATES: Final = frozenset({SUCCEEDED, FAILED, CANCELLED})

OUTCOMES: Final[tuple[str, ...]] = get_args(Outcome)  # one list: the type's
# Outcomes that are not the job's fault: they hand the job back without using a try.
FREE_OUTCOMES: Final = frozenset({"interrupted", "lost_lease", "deferred"})


# The run_at of a job parked by its concurrency limit (9999-12-31 UTC): it waits for a running
# attempt of its key to end, which hands it back; shown as queued, never as scheduled.
PARKED_AT: Final = 253402214400.0
# A job dispatched with a fair_key has, for a run_at, its virtual start among its queue's
# tenants (0, 1, 2, ... per key, from the queue's virtual now): always due, and taken in that
# order. A run_at before this (2001-09-09) is such a virtual time.
FAIR_BEFORE: Final = 1e9


def visible_state(stored_state: str, run_at: float, now: float) -> str:
    """A queued job whose run_at lies in the future is shown as scheduled (a parked one is
    queued: it waits on its concurrency key, not on a time)."""
    if stored_state == QUEUED and now < run_at < PARKED_AT:
        return SCHEDULED
    return stored_state

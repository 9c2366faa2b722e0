"""A job's error text and traceback are recorded whatever they hold: a NUL or a lone surrogate
(which no store's encoder takes as it is) escaped, a huge text capped head and tail with its
size. The end is accepted and decided like any other failure, never taken for a store outage
(which would leave the attempt to be rescued as `crashed` and retried, for a text)."""

from __future__ import annotations

from conformance.helpers import attempt, enqueue, job, new_job, reserve_one
from tenure.core.records import Ending
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.texts import ERROR_MAX_CHARS, TRACEBACK_MAX_CHARS


def test_unencodable_error_text_is_recorded_escaped(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1)))
    r = reserve_one(store)
    ended = store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="failed",
            error="ValueError: a\x00b \ud800 c\u00e9",
            traceback='File "x.py"\n  raise ValueError("a\x00b \udcff")\n',
        )
    )[0]
    assert (ended.accepted, ended.state) == (True, "failed")
    got = attempt(store, job_id, 1)
    assert got.outcome == "failed"
    assert got.error == "ValueError: a\\x00b \\ud800 c\u00e9"  # the rest kept as it was
    assert got.traceback == 'File "x.py"\n  raise ValueError("a\\x00b \\udcff")\n'
    assert (job(store, job_id).last_error or "").startswith(got.error)


def test_a_huge_error_text_is_capped_head_and_tail_with_its_size(store: Store) -> None:
    (job_id,) = enqueue(store, new_job(policy=Policy(tries=1)))
    r = reserve_one(store)
    error = "HEAD" + "x" * 5_000_000 + "TAIL"
    trace = "START" + "y" * 1_000_000 + "END"
    store.end_attempt(
        Ending(job_id=job_id, token=r.token, outcome="failed", error=error, traceback=trace)
    )
    got = attempt(store, job_id, 1)
    assert got.error is not None and got.traceback is not None
    assert len(got.error) <= ERROR_MAX_CHARS
    assert got.error.startswith("HEAD") and got.error.endswith("TAIL")
    assert f"of {len(error):,} characters cut" in got.error
    assert len(got.traceback) <= TRACEBACK_MAX_CHARS
    assert got.traceback.startswith("START") and got.traceback.endswith("END")
    assert f"of {len(trace):,} characters cut" in got.traceback

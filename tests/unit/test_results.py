"""The pure rules of results and waiting: what is stored for a return value, and what an
ended job's record means for its waiter."""

from __future__ import annotations

import pytest

import tenure
from tenure import waiting
from tenure.core import results
from tenure.core.records import JobRecord
from tenure.core.retry import Policy


def test_a_return_value_is_stored_as_compact_json_and_none_as_nothing() -> None:
    assert results.encode("j", {"a": [1, 2.5, None]}, max_bytes=100, encrypted=False) == (
        '{"a":[1,2.5,null]}'
    )
    assert results.encode("j", None, max_bytes=1, encrypted=False) is None
    assert results.decode('{"a":1}') == {"a": 1} and results.decode(None) is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("x" * 50, "is 52 bytes, over the 40-byte limit"),
        (float("nan"), "cannot be stored as JSON"),
        (object(), "cannot be stored as JSON (object"),
    ],
)
def test_a_value_that_cannot_be_stored_says_why(value: object, words: str) -> None:
    with pytest.raises(results.ResultError) as raised:
        results.encode("total", value, max_bytes=40, encrypted=False)
    assert "the return value of job 'total'" in str(raised.value) and words in str(raised.value)


def record(state: str, *, result: str | None = None, error: str | None = None) -> JobRecord:
    return JobRecord(
        id="j1", name="total", queue="default", payload="{}", state=state, policy=Policy(),
        created_at=0.0, run_at=0.0, finished_at=None, tries_used=1, exceptions=0,
        last_error=error, lease_expires_at=None, worker_id=None, batch_id=None,
        result_text=result,
    )  # fmt: skip


def test_an_ended_job_settles_its_waiter() -> None:
    assert waiting.settled(record("succeeded", result="[1]")) == [1]
    with pytest.raises(tenure.JobFailed, match="job j1 \\(total\\) failed: boom") as failed:
        waiting.settled(record("failed", error="boom"))
    assert failed.value.error == "boom" and failed.value.job_id == "j1"
    with pytest.raises(tenure.JobCancelled):
        waiting.settled(record("cancelled"))


def test_a_negative_timeout_is_refused() -> None:
    with pytest.raises(tenure.ConfigError, match="expected seconds >= 0 or None, got -1"):
        waiting._deadline(-1)

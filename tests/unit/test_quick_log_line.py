"""The worker's line per successful attempt, written straight through tenure's JSON handler
(logs.quick_info), is the line logging writes; and anything else that could see the record (a
handler of the application, a filter, a level) gets it through logging as before."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator

import pytest

from tenure.core.records import EndResult, Reservation
from tenure.core.retry import Policy
from tenure.logs import FORMAT_ENV, _Quick, log_end, quick_info, setup_logging
from tenure.worker.execute import SUCCEEDED

RES = Reservation(
    job_id="j1",
    name="send_invoice",
    queue="billing",
    payload="[]",
    policy=Policy(),
    attempt=2,
    token=2,
    lease_expires_at=0.0,
    batch_id=None,
)
OK = EndResult(accepted=True, state="succeeded")


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    monkeypatch.setenv(FORMAT_ENV, "json")
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    setup_logging("INFO")
    yield out
    root.handlers[:], root.level = saved


class Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def alone() -> None:
    """Only tenure's handler on the root, as in a worker (pytest adds its own for the test)."""
    logging.getLogger().handlers[:] = [
        h for h in logging.getLogger().handlers if h is _Quick.handler
    ]


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_quick_line_is_the_line_logging_writes(stderr: io.StringIO) -> None:
    alone()
    assert quick_info(logging.getLogger("tenure.worker"), "probe", {})
    stderr.truncate(0)
    stderr.seek(0)
    log_end(RES, SUCCEEDED, 0.01234, OK, "w-1")
    logging.getLogger("tenure.worker").info(
        "%s succeeded in %.2f s",
        "job j1 send_invoice attempt 2",
        0.01234,
        extra={
            "job_id": "j1",
            "job": "send_invoice",
            "attempt": 2,
            "queue": "billing",
            "outcome": "succeeded",
            "worker": "w-1",
            "duration_s": 0.0123,
        },
    )
    quick, logged = lines(stderr)
    assert quick.pop("ts") and logged.pop("ts")
    assert quick == logged
    assert quick["msg"] == "job j1 send_invoice attempt 2 succeeded in 0.01 s"


def test_an_application_handler_still_gets_the_record(stderr: io.StringIO) -> None:
    alone()
    seen = Seen()
    logging.getLogger().addHandler(seen)
    log_end(RES, SUCCEEDED, 0.5, OK, "w-1")
    assert [r.getMessage() for r in seen.records] == [
        "job j1 send_invoice attempt 2 succeeded in 0.50 s"
    ]
    assert len(lines(stderr)) == 1  # and tenure's handler wrote it once


def test_a_filter_or_a_level_is_obeyed(stderr: io.StringIO) -> None:
    alone()
    worker_log = logging.getLogger("tenure.worker")
    worker_log.addFilter(lambda record: False)
    try:
        log_end(RES, SUCCEEDED, 0.5, OK, "w-1")
    finally:
        worker_log.filters.clear()
    logging.getLogger().setLevel(logging.WARNING)
    log_end(RES, SUCCEEDED, 0.5, OK, "w-1")
    assert lines(stderr) == []


def test_with_tenure_s_handler_alone_the_line_skips_logging(stderr: io.StringIO) -> None:
    alone()
    assert quick_info(logging.getLogger("tenure.worker"), "a line", {"job_id": "j1"})
    (line,) = lines(stderr)
    assert (line["level"], line["logger"], line["msg"], line["job_id"]) == (
        "info",
        "tenure.worker",
        "a line",
        "j1",
    )


@pytest.mark.parametrize(
    ("name", "queue", "worker"),
    [("send_invoice", "billing", "w-1"), ("envoyer_façture", 'q"uoted\\', "w-ü\n")],
)
def test_the_success_line_is_byte_for_byte_the_formatter_s(
    stderr: io.StringIO, name: str, queue: str, worker: str
) -> None:
    alone()
    res = Reservation("j-\u00e9", name, queue, "[]", Policy(), 7, 7, 0.0, None)
    log_end(res, SUCCEEDED, 0.123456, OK, worker)
    record = logging.LogRecord("tenure.worker", logging.INFO, __file__, 1, "m", None, None)
    record.msg = f"job j-\u00e9 {name} attempt 7 succeeded in 0.12 s"
    record.__dict__.update(
        job_id="j-\u00e9",
        job=name,
        attempt=7,
        outcome="succeeded",
        queue=queue,
        worker=worker,
        duration_s=0.1235,
    )
    assert _Quick.handler is not None
    expected = _Quick.handler.format(record)
    (written,) = stderr.getvalue().splitlines()
    # the same text but for the time stamp, which each line reads itself
    assert written[written.index('", "level"') :] == expected[expected.index('", "level"') :]
    assert json.loads(written)["queue"] == queue


@pytest.mark.parametrize(
    "duration", [0.0, 0.00004999, 0.0001234, 0.0049999, 0.005, 0.00500001, 0.0155, 12.3456789]
)
def test_the_success_line_s_numbers_are_the_formatter_s(
    stderr: io.StringIO, duration: float
) -> None:
    # the line writes "%.2f" of a short duration as 0.00 without formatting it, and the
    # duration field as the encoder's repr of round(duration, 4)
    alone()
    log_end(RES, SUCCEEDED, duration, OK, "w-1")
    (line,) = lines(stderr)
    assert line["msg"] == f"job j1 send_invoice attempt 2 succeeded in {duration:.2f} s"
    assert line["duration_s"] == round(duration, 4)
    written = stderr.getvalue()
    assert f'"duration_s": {round(duration, 4)!r}}}' in written
    assert re.match(r'\{"ts": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", ', written)

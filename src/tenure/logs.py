"""Logging set-up: text for people at a terminal, one JSON object per line for machines.

Every line about a job carries its id, name, attempt and (when it ended) outcome as fields,
so a log search for one job id finds its whole story.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
import time
from typing import Any, Protocol

from tenure.core.records import EndResult, Reservation
from tenure.settings import LOG_FORMAT_ENV

log = logging.getLogger("tenure.worker")

JOB_FIELDS = ("job_id", "job", "attempt", "outcome", "queue", "worker", "duration_s")
FORMAT_ENV = LOG_FORMAT_ENV


class JsonFormatter(logging.Formatter):
    """One JSON object per line. The worker writes a line per attempt, so the line is built
    cheaply: the date and time to the second made once a second, the fields read straight
    from the record. Every line is written at once, except a worker child's success lines:
    gathered in a page its supervisor shares (worker/log_spool.py), so that a SIGKILL still
    loses none of them."""

    _second = -1
    _stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        data = self.fields(record.created, int(record.msecs), record.levelname, record.name)
        data["msg"] = record.getMessage()
        fields = record.__dict__
        for key in JOB_FIELDS:
            if key in fields:
                data[key] = fields[key]
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return _ENCODE(data)

    def fields(self, created: float, msecs: int, level: str, logger: str) -> dict[str, Any]:
        return {"ts": self.stamp(created, msecs), "level": level.lower(), "logger": logger}

    def stamp(self, created: float, msecs: int) -> str:
        second = int(created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._stamp}.{msecs:03d}Z"


class Spool(Protocol):
    """Where a worker's child gathers its success lines (worker/log_spool.py)."""

    def add(self, line: str) -> None: ...

    def flush(self) -> None: ...


class _Quick:
    """tenure's own JSON handler, when setup_logging installed it (see quick_info)."""

    handler: logging.StreamHandler[Any] | None = None
    formatter = JsonFormatter()
    spool: Spool | None = None


def spool_lines(spool: Spool | None) -> bool:
    """Gather quick_info's lines in `spool` (None: write each at once again); False when
    tenure's JSON handler is not the one writing (nothing to gather)."""
    if spool is not None and _Quick.handler is None:
        return False
    _Quick.spool = spool
    return True


def _unspool() -> None:
    # A process a job forks (multiprocessing, os.fork) shares the spool's page with the child
    # that forked it, and maybe a lock its flusher thread held: it writes its own lines.
    _Quick.spool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unspool)


class _Handler(logging.StreamHandler[Any]):
    """tenure's handler: any line it writes goes after the gathered ones (the log's order)."""

    def emit(self, record: logging.LogRecord) -> None:
        spool = _Quick.spool
        if spool is not None and self is _Quick.handler:
            spool.flush()
        super().emit(record)


def quick_info(logger: logging.Logger, msg: str, fields: dict[str, Any]) -> bool:
    """Write `logger`'s INFO line `msg` (no %-arguments) straight through tenure's own JSON
    handler: the same line logging writes, written and flushed at once under the handler's
    lock (in a worker's child: gathered in its spool, see spool_lines), without a LogRecord
    and the handler chain (most of a line's cost, and the worker writes one per job). Only
    when nothing else could see the record (_quick). False: use logging."""
    if not _quick(logger):
        return False
    now = time.time()
    data = _Quick.formatter.fields(now, int((now - int(now)) * 1000), "INFO", logger.name)
    data["msg"] = msg
    for key in JOB_FIELDS:
        if key in fields:
            data[key] = fields[key]
    try:
        return _write_quick(_ENCODE(data))
    except Exception:
        return False  # logging writes it, or reports why it cannot


def _quick(logger: logging.Logger) -> bool:
    """Whether tenure's JSON handler alone would see `logger`'s INFO record: INFO enabled, no
    filter on the logger, no handler but that one on the way to the root."""
    handler = _Quick.handler
    root = logging.root
    handlers = root.handlers
    if handler is None or len(handlers) != 1 or handlers[0] is not handler:
        return False
    if not logger.isEnabledFor(logging.INFO):
        return False
    if logger.filters or handler.filters or handler.level > logging.INFO:
        return False
    node: logging.Logger | None = logger
    while node is not None and node is not root:
        if node.handlers or not node.propagate:
            return False
        node = node.parent
    return True


def _write_quick(text: str) -> bool:
    """Write one JSON line through tenure's handler (in a worker's child: into its spool)."""
    handler = _Quick.handler
    if handler is None:
        return False
    line = text + handler.terminator
    spool = _Quick.spool
    if spool is not None:  # a worker's child: written with the others, soon
        spool.add(line)
        return True
    with handler.lock or contextlib.nullcontext():
        handler.stream.write(line)
        handler.stream.flush()
    return True


def success_line(res: Reservation, duration: float, worker_id: str) -> str:
    """log_end's line for a success, as JsonFormatter writes it (same keys, order and
    escaping), put together from strings in one f-string: no dict and no encoder walk per
    job, the part of the worker's per-job line that cost the most. What a job name, queue
    and worker share (most of the line) is quoted once (_success_parts); the message is
    quoted from its parts (quoting is per character: the job id's quoted text serves both
    its field and the message). Numbers as the encoder writes them: an int's repr, and the
    repr of the duration rounded to 4 places (`four`), without the shortest-repr search:
    both round the exact binary value to 4 places the same way, and a number of at most 15
    digits (a duration under 10**11 s) is its own shortest repr, trailing zeros dropped.
    The time stamp is JsonFormatter.stamp's, its text made once a second."""
    now = time.time()
    second = int(now)
    formatter = _Quick.formatter
    if second != formatter._second:
        formatter.stamp(now, 0)  # the second's text, made once
    head, named, rest = _success_parts(log.name, res.name, res.queue, worker_id)
    job_id = _quote(res.job_id)
    attempt = str(res.attempt)
    four = f"{duration:.4f}".rstrip("0")
    # ".2f" of a duration under 0.005 s (a double below 0.005 is below it exactly): 0.00
    two = "0.00" if duration < 0.005 else f"{duration:.2f}"
    return (
        f'{{"ts": "{formatter._stamp}{_MILLIS[int((now - second) * 1000)]}{head}'
        f"{job_id[1:-1]}{named[0]}{attempt} succeeded in {two} s"
        f'", "job_id": {job_id}{named[1]}{attempt}{rest}'
        f"{four + '0' if four[-1] == '.' else four}}}"
    )


# a time stamp's milliseconds, as JsonFormatter.stamp writes them
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))


@functools.lru_cache(maxsize=256)
def _success_parts(
    logger: str, name: str, queue: str, worker: str
) -> tuple[str, tuple[str, str], str]:
    """The constant runs of success_line's text for one job name, queue and worker: what
    comes before the job id in the message, the runs after it (in the message, then in the
    fields) and the run before the duration."""
    head = f'", "level": "info", "logger": {_quote(logger)}, "msg": "job '
    quoted = _quote(name)
    named = (f" {quoted[1:-1]} attempt ", f', "job": {quoted}, "attempt": ')
    rest = (
        f', "outcome": "succeeded", "queue": {_quote(queue)}, "worker": {_quote(worker)},'
        ' "duration_s": '
    )
    return head, named, rest


# json.dumps(data, default=str) without building an encoder for every line
_ENCODE = json.JSONEncoder(default=str).encode
# a string as _ENCODE writes it (ASCII, escaped), without the encoder's walk
_quote = json.encoder.encode_basestring_ascii


def setup_logging(level: str = "INFO") -> None:
    wanted = os.environ.get(FORMAT_ENV) or ("text" if sys.stderr.isatty() else "json")
    handler = _Handler(sys.stderr)
    _Quick.handler = None
    _Quick.spool = None
    if wanted == "json":
        handler.setFormatter(JsonFormatter())
        _Quick.handler = handler
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    # Neither format shows the caller, thread or process, so a record need not look them up
    # (the logging HOWTO's "Optimization": the lookups are most of a record's cost).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def job_fields(res: Reservation, **more: Any) -> dict[str, Any]:
    """The `extra=` of a log line about one attempt."""
    return {
        "job_id": res.job_id,
        "job": res.name,
        "attempt": res.attempt,
        "queue": res.queue,
        **more,
    }


class Ending(Protocol):
    """How an attempt ended, as the line about it says (worker.execute.Ended)."""

    @property
    def outcome(self) -> str: ...

    @property
    def error(self) -> str | None: ...


def log_end(
    res: Reservation, ended: Ending, duration: float, result: EndResult | None, worker_id: str
) -> None:
    """The line that says how an attempt ended: written by whoever recorded the end."""
    succeeded = result is not None and result.accepted and ended.outcome == "succeeded"
    if succeeded and _quick(log):
        try:
            if _write_quick(success_line(res, duration, worker_id)):
                return
        except Exception:
            pass  # logging writes it, or reports why it cannot
    where = f"job {res.job_id} {res.name} attempt {res.attempt}"
    fields = job_fields(res, outcome=ended.outcome, worker=worker_id, duration_s=round(duration, 4))
    if result is None:
        log.error(
            "%s %s in %.2f s but the store could not record it; the lease will "
            "expire and the job will be rescued",
            where,
            ended.outcome,
            duration,
            extra=fields,
        )
    elif not result.accepted:
        log.warning(
            "%s %s in %.2f s, but its lease had been taken over: result refused (fencing)",
            where,
            ended.outcome,
            duration,
            extra=fields,
        )
    elif succeeded:
        log.info("%s succeeded in %.2f s", where, duration, extra=fields)
    else:
        log.warning(
            "%s %s in %.2f s: %s; %s -> %s",
            where,
            ended.outcome,
            duration,
            ended.error,
            result.reason,
            result.state,
            extra=fields,
        )

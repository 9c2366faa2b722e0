"""Logging set-up: text for people at a terminal, one JSON object per line for machines.

Every line about a job carries its id, name, attempt and (when it ended) outcome as fields,
so a log search for one job id finds its whole story.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from tenure.settings import LOG_FORMAT_ENV
from tenure.stores.base import Reservation

JOB_FIELDS = ("job_id", "job", "attempt", "outcome", "queue", "worker", "duration_s")
FORMAT_ENV = LOG_FORMAT_ENV


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in JOB_FIELDS:
            if hasattr(record, key):
                data[key] = getattr(record, key)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def setup_logging(level: str = "INFO") -> None:
    wanted = os.environ.get(FORMAT_ENV) or ("text" if sys.stderr.isatty() else "json")
    handler = logging.StreamHandler(sys.stderr)
    if wanted == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))


def job_fields(res: Reservation, **more: Any) -> dict[str, Any]:
    """The `extra=` of a log line about one attempt."""
    return {
        "job_id": res.job_id,
        "job": res.name,
        "attempt": res.attempt,
        "queue": res.queue,
        **more,
    }

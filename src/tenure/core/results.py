"""Job results: a job's JSON return value, stored with its success in the same store call
that records it (`end_attempt(Ending(result=...))`, `JobTransaction.complete(result)`), so
there is never a success without its result nor a result of a stale attempt (the token
decides both at once).

The same rules as payloads (tenure.core.payload): JSON only, the App's `max_payload_bytes`, sealed
when the job is `encrypted=True`. `None` stores nothing.
"""

from __future__ import annotations

import json
from typing import Any

from tenure.core import payload
from tenure.core.errors import PayloadError


class ResultError(PayloadError):
    """The job's return value cannot be stored as its JSON result."""


def encode(job_name: str, value: Any, *, max_bytes: int, encrypted: bool) -> str | None:
    """The stored text of a return value (None for None), or ResultError saying why not:
    a value that is not JSON or is over the limit fails the attempt, never a cut value."""
    if value is None:
        return None
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise ResultError(f"the return value of job '{job_name}' is nested too deeply") from None
    except (TypeError, ValueError) as exc:
        raise ResultError(
            f"the return value of job '{job_name}' cannot be stored as JSON "
            f"({type(value).__name__}: {exc}); return plain data (str, int, float, bool, list, "
            "dict) or None"
        ) from None
    if encrypted:
        text = payload.seal(text)
    size = len(text.encode())
    if size > max_bytes:
        raise ResultError(
            f"the return value of job '{job_name}' is {size:,} bytes, over the {max_bytes:,}-byte "
            "limit results share with payloads; store large data elsewhere (a table, object "
            "storage) and return its id instead"
        )
    return text


def decode(text: str | None) -> Any:
    """The value a stored result holds (None when nothing was stored)."""
    if text is None:
        return None
    plain = payload.unseal(text)
    try:
        return json.loads(plain)
    except ValueError:
        raise PayloadError(f"stored result is not valid JSON: {plain[:80]!r}") from None

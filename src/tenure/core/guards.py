"""Guards against duplicate work, held in the store: uniqueness, overlap and rate limits.

Keys are computed at dispatch from the job's own arguments (the key functions run in the
dispatching process) and stored with the job, so every host's workers see the same locks
without a separate cache server, and the store checks them atomically with enqueue/reserve.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenure.core.errors import ConfigError

KeyFunction = Callable[..., Any]

UNIQUE_UNTIL = ("completed", "processing")
WINDOWS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(?:(\d+(?:\.\d+)?)\s*)?(second|minute|hour|day)s?\s*$")


@dataclass(frozen=True)
class Guards:
    """What the store must check for one job; all None means no guard."""

    unique_key: str | None = None
    unique_until: str = "completed"
    unique_for: float | None = None  # seconds the uniqueness lasts at most
    overlap_key: str | None = None
    overlap_delay: float = 1.0
    rate_key: str | None = None
    rate_limit: int | None = None  # starts allowed ...
    rate_window: float | None = None  # ... per this many seconds
    concurrency_key: str | None = None  # at most concurrency_limit attempts running per key
    concurrency_limit: int | None = None
    debounce_key: str | None = None  # one pending job per key, replaced by later dispatches
    debounce: float | None = None  # ... within this many seconds
    fair_key: str | None = None  # ready jobs taken round robin across keys, FIFO within one
    fair_weight: float = 1.0  # ... this key's share of the turns


NO_GUARDS = Guards()


@dataclass(frozen=True)
class GuardSpec:
    """The guards as declared on `@app.job(...)`, before any arguments are known."""

    unique: KeyFunction | None = None
    unique_for: float | None = None
    unique_until: str = "completed"
    overlap: KeyFunction | None = None
    overlap_delay: float = 1.0
    rate_limit: tuple[int, float] | None = None
    rate_key: KeyFunction | None = None
    concurrency: int | None = None
    concurrency_key: KeyFunction | None = None
    debounce: float | None = None
    debounce_key: KeyFunction | None = None
    fair_key: KeyFunction | None = None
    fair_weights: tuple[tuple[str, float], ...] = ()

    def for_call(self, job_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Guards:
        if self == NO_SPEC:
            return NO_GUARDS
        rate_key = None
        if self.rate_limit is not None:
            rate_key = job_name
            if self.rate_key is not None:
                rate_key += ":" + _key(job_name, "rate_key", self.rate_key, args, kwargs)
        return Guards(
            unique_key=(
                None
                if self.unique is None
                else f"{job_name}:{_key(job_name, 'unique', self.unique, args, kwargs)}"
            ),
            unique_until=self.unique_until,
            unique_for=self.unique_for,
            overlap_key=(
                None
                if self.overlap is None
                else f"{job_name}:{_key(job_name, 'overlap', self.overlap, args, kwargs)}"
            ),
            overlap_delay=self.overlap_delay,
            rate_key=rate_key,
            rate_limit=self.rate_limit[0] if self.rate_limit else None,
            rate_window=self.rate_limit[1] if self.rate_limit else None,
            concurrency_key=_scoped(job_name, "concurrency_key", self.concurrency_key, args, kwargs)
            if self.concurrency is not None
            else None,
            concurrency_limit=self.concurrency,
            debounce_key=_scoped(job_name, "debounce_key", self.debounce_key, args, kwargs)
            if self.debounce is not None
            else None,
            debounce=self.debounce,
            **self._fair(job_name, args, kwargs),
        )

    def _fair(self, job_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.fair_key is None:
            return {}
        # one key space per queue, not per job: a tenant's jobs of every kind share its turns
        key = _scoped(job_name, "fair_key", self.fair_key, args, kwargs)[len(job_name) + 1 :]
        return {"fair_key": key, "fair_weight": dict(self.fair_weights).get(key, 1.0)}


NO_SPEC = GuardSpec()


def make_spec(
    *,
    unique: KeyFunction | bool | None,
    unique_for: float | None,
    unique_until: str,
    overlap: KeyFunction | bool | None,
    overlap_delay: float,
    rate_limit: str | None,
    rate_key: KeyFunction | None,
    concurrency: int | None = None,
    concurrency_key: KeyFunction | None = None,
    debounce: float | None = None,
    debounce_key: KeyFunction | None = None,
    fair_key: KeyFunction | None = None,
    fair_weights: dict[str, float] | None = None,
) -> GuardSpec:
    """Validate the declared guards once, at definition, with 'expected X, got Y' messages."""
    if unique_until not in UNIQUE_UNTIL:
        raise ConfigError(
            f"unique_until: expected 'completed' or 'processing', got {unique_until!r}"
        )
    if unique_for is not None and unique_for <= 0:
        raise ConfigError(f"unique_for: expected seconds > 0, got {unique_for!r}")
    if overlap_delay < 0:
        raise ConfigError(f"overlap_delay: expected seconds >= 0, got {overlap_delay!r}")
    if rate_key is not None and rate_limit is None:
        raise ConfigError("rate_key= needs rate_limit=, such as rate_limit='10/minute'")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ConfigError(f"concurrency: expected an int >= 1, got {concurrency!r}")
    if concurrency_key is not None and concurrency is None:
        raise ConfigError("concurrency_key= needs concurrency=, such as concurrency=2")
    if debounce is not None and (
        isinstance(debounce, bool) or not isinstance(debounce, int | float) or debounce <= 0
    ):
        raise ConfigError(f"debounce: expected seconds > 0, got {debounce!r}")
    if debounce_key is not None and debounce is None:
        raise ConfigError("debounce_key= needs debounce=, such as debounce=5")
    if fair_weights is not None and fair_key is None:
        raise ConfigError(
            "fair_weights= needs fair_key=, such as fair_key=lambda tenant, *_: tenant"
        )
    weights = _weights(fair_weights)
    for what, fn in (
        ("concurrency_key", concurrency_key),
        ("debounce_key", debounce_key),
        ("fair_key", fair_key),
    ):
        if fn is not None and not callable(fn):
            raise ConfigError(f"{what}: expected a key function, got {fn!r}")
    return GuardSpec(
        unique=_key_function("unique", unique),
        unique_for=unique_for,
        unique_until=unique_until,
        overlap=_key_function("overlap", overlap),
        overlap_delay=overlap_delay,
        rate_limit=parse_rate(rate_limit) if rate_limit is not None else None,
        rate_key=rate_key,
        concurrency=concurrency,
        concurrency_key=concurrency_key,
        debounce=None if debounce is None else float(debounce),
        debounce_key=debounce_key,
        fair_key=fair_key,
        fair_weights=weights,
    )


def _weights(value: object) -> tuple[tuple[str, float], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(k, str | int)
        and not isinstance(w, bool)
        and isinstance(w, int | float)
        and w > 0
        for k, w in value.items()
    ):
        raise ConfigError(
            f"fair_weights: expected a dict of key -> weight > 0, such as "
            f"{{'enterprise': 3}}, got {value!r}"
        )
    return tuple((str(k), float(w)) for k, w in sorted(value.items(), key=lambda kw: str(kw[0])))


def parse_rate(text: str) -> tuple[int, float]:
    """'10/minute' -> (10, 60.0); '5/30 seconds' -> (5, 30.0)."""
    match = RATE_RE.match(text) if isinstance(text, str) else None
    if match is None or int(match.group(1)) < 1:
        raise ConfigError(
            f"rate_limit: expected 'N/second', 'N/minute', 'N/hour', 'N/day' or 'N/M seconds' "
            f"with N >= 1, got {text!r}"
        )
    per = float(match.group(2) or 1) * WINDOWS[match.group(3)]
    return int(match.group(1)), per


def _key_function(what: str, value: KeyFunction | bool | None) -> KeyFunction | None:
    if value is None or value is False:
        return None
    if value is True:
        # unique=True: one job per set of arguments
        return lambda *args, **kwargs: repr((args, sorted(kwargs.items())))
    if not callable(value):
        raise ConfigError(f"{what}: expected a key function (or True), got {value!r}")
    return value


def _key(
    job_name: str, what: str, fn: KeyFunction, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str:
    try:
        return str(fn(*args, **kwargs))
    except Exception as exc:
        raise ConfigError(
            f"job {job_name!r}: its {what} key function failed on these arguments: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _scoped(
    job_name: str,
    what: str,
    fn: KeyFunction | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> str:
    """The job's name, then ':' and the key function's text (a str or an int; anything else
    is refused at dispatch, before anything is stored): one key space per job."""
    if fn is None:
        return job_name
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:
        raise ConfigError(
            f"job {job_name!r}: its {what} function failed on these arguments: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigError(
            f"job {job_name!r}: its {what} function must return text (a str or an int), "
            f"got {type(value).__name__} {value!r}"
        )
    return f"{job_name}:{value}"

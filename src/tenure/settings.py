"""Every setting in one place: what a job and a worker can be told, their defaults, the
environment variables that set them, and one validation that says "expected X, got Y".

A job's settings are JobOptions; a worker's are WorkerOptions, from which the CLI builds
`tenure worker`'s options (flag, help, default and environment variable per field), so a new
setting is written once, here.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from tenure.core import payload
from tenure.core.errors import ConfigError
from tenure.core.guards import GuardSpec, KeyFunction, make_spec
from tenure.core.retention import APP_DEFAULT, KeepOverride, KeepSetting, override_of
from tenure.core.retry import Backoff, Policy, validate_policy

# The environment variables tenure reads, each in one place.
URL_ENV = "TENURE_URL"
ENCRYPTION_KEY_ENV = payload.ENCRYPTION_KEY_ENV  # named in core, which cannot import settings
LOG_FORMAT_ENV = "TENURE_LOG_FORMAT"
DASHBOARD_TOKEN_ENV = "TENURE_DASHBOARD_TOKEN"
DEBUG_ENV = "TENURE_DEBUG"
WORKER_ENV_PREFIX = "TENURE_WORKER_"


# -- jobs ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobOptions:
    """The settings of `@app.job(...)`, with their defaults (DESIGN.md's semantics 3-7)."""

    name: str | None = None
    queue: str = "default"
    timeout: float = 60.0
    kill_after: float = 5.0
    tries: int | None = 3
    backoff: Backoff = "exponential"
    retry_until: timedelta | datetime | None = None
    max_exceptions: int | None = None
    count_crashes: bool = True
    fail_on_timeout: bool = False
    encrypted: bool = False
    unique: KeyFunction | bool | None = None
    unique_for: float | None = None
    unique_until: str = "completed"
    overlap: KeyFunction | bool | None = None
    overlap_delay: float = 1.0
    rate_limit: str | None = None
    rate_key: KeyFunction | None = None
    concurrency: int | None = None
    concurrency_key: KeyFunction | None = None
    debounce: float | None = None
    debounce_key: KeyFunction | None = None
    fair_key: KeyFunction | None = None
    fair_weights: dict[str, float] | None = None
    transactional: bool = False
    # retention once finished (tenure.core.retention): a timedelta, seconds, None (forever)
    keep_succeeded: KeepSetting = APP_DEFAULT
    keep_failed: KeepSetting = APP_DEFAULT  # failed and cancelled
    priority: int = 0  # lower runs first within a queue; FIFO within a priority

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> JobOptions:
        """From `@app.job` keywords; a misspelled one is named, with the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(
                f"unknown setting {', '.join(map(repr, unknown))}; "
                f"expected one of {', '.join(sorted(known))}"
            )
        options = cls(**settings)
        check_priority(options.priority)
        return options

    def policy(self) -> Policy:
        """The retry policy these settings give, validated (retry_until is fixed at dispatch)."""
        if self.retry_until is not None and not isinstance(self.retry_until, timedelta | datetime):
            raise ConfigError(
                f"retry_until: expected a timedelta or a datetime, got {self.retry_until!r}"
            )
        backoff = list(self.backoff) if isinstance(self.backoff, tuple) else self.backoff
        policy = Policy(
            timeout=float(self.timeout),
            kill_after=float(self.kill_after),
            tries=self.tries,
            backoff=backoff,
            # a placeholder for validation; the real deadline is fixed at dispatch
            retry_until=0.0 if self.retry_until is not None else None,
            max_exceptions=self.max_exceptions,
            count_crashes=self.count_crashes,
            fail_on_timeout=self.fail_on_timeout,
        )
        validate_policy(policy)
        return policy

    def keep(self) -> KeepOverride:
        """The job's own retention over the App's, validated ("expected X, got Y")."""
        return override_of(self.keep_succeeded, self.keep_failed)

    def guards(self) -> GuardSpec:
        return make_spec(
            unique=self.unique,
            unique_for=self.unique_for,
            unique_until=self.unique_until,
            overlap=self.overlap,
            overlap_delay=self.overlap_delay,
            rate_limit=self.rate_limit,
            rate_key=self.rate_key,
            concurrency=self.concurrency,
            concurrency_key=self.concurrency_key,
            debounce=self.debounce,
            debounce_key=self.debounce_key,
            fair_key=self.fair_key,
            fair_weights=self.fair_weights,
        )


def check_priority(priority: object) -> int:
    """A job's priority: an int (lower runs first), as `@app.job` and `.options()` take it."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ConfigError(f"priority: expected an int (lower runs first), got {priority!r}")
    if not -PRIORITY_LIMIT <= priority <= PRIORITY_LIMIT:
        raise ConfigError(
            f"priority: expected an int from {-PRIORITY_LIMIT:,} to {PRIORITY_LIMIT:,}, "
            f"got {priority:,}"
        )
    return priority


# Priorities are few in practice; bounded so that every store can hold them exactly (an
# INTEGER column, a Redis key name) and a typo such as 10**12 is caught at definition.
PRIORITY_LIMIT = 1_000_000


# -- workers -------------------------------------------------------------------------------
def _option(default: Any, help: str, *, flag: str | None = None) -> Any:
    return field(default=default, metadata={"help": help, "flag": flag})


@dataclass(frozen=True)
class WorkerOptions:
    """`tenure worker`'s settings. Each field is a flag (`--max-jobs`) and an environment
    variable (`TENURE_WORKER_MAX_JOBS`); a flag given wins over the variable."""

    app_spec: str = field(metadata={"help": "MODULE:ATTR of your tenure.App.", "flag": "--app"})
    queues: tuple[str, ...] = _option(
        ("default",),
        "Queues in priority order, comma-separated; high=3,default=1 weighs them instead: "
        "each fetch tries them in a random order, each first in that proportion.",
    )
    concurrency: int = _option(1, "Attempts run at once.")
    lease: float = _option(30.0, "Lease in seconds; renewed every lease/3.")
    grace: float = _option(8.0, "On SIGTERM, seconds running jobs get before being handed back.")
    max_jobs: int | None = _option(None, "Exit after this many jobs.")
    max_time: float | None = _option(None, "Exit after this many seconds.")
    memory_mb: float | None = _option(
        None, "Kill and replace a child process above this many MB.", flag="--memory"
    )
    burst: bool = _option(False, "Drain the queues, then exit.")
    unknown_grace: float = _option(
        600.0,
        "Seconds a job no worker here knows is handed back (rolling deploys) before it fails; "
        "0 fails it at once.",
    )
    metrics_port: int | None = _option(None, "Serve Prometheus metrics on this port (/metrics).")
    metrics_host: str = _option(
        "127.0.0.1", "Address for --metrics-port; 0.0.0.0 inside a container."
    )

    # from --queues high=3,default=1 (queues then holds the names alone); () for strict order
    weights: tuple[int, ...] = field(default=(), metadata={"help": "", "internal": True})

    def __post_init__(self) -> None:
        names, weights = split_weights(self.queues)
        object.__setattr__(self, "queues", names)
        if weights:
            object.__setattr__(self, "weights", weights)

    def queue_order(self, rng: random.Random) -> tuple[str, ...]:
        """The queues in the order one fetch tries them (see weighted_order)."""
        return weighted_order(self.queues, self.weights, rng)

    def problems(self) -> list[str]:
        out = []
        if self.concurrency < 1:
            out.append(f"--concurrency: expected >= 1, got {self.concurrency}")
        if self.lease < 1:
            out.append(f"--lease: expected seconds >= 1, got {self.lease:g}")
        if self.grace < 0:
            out.append(f"--grace: expected seconds >= 0, got {self.grace:g}")
        if self.unknown_grace < 0:
            out.append(f"--unknown-grace: expected seconds >= 0, got {self.unknown_grace:g}")
        if not self.queues or any(not q for q in self.queues):
            out.append(f"--queues: expected names separated by commas, got {self.queues!r}")
        if self.memory_mb is not None and self.memory_mb <= 0:
            out.append(f"--memory: expected MB > 0, got {self.memory_mb:g}")
        return out

    def validate(self) -> WorkerOptions:
        problems = self.problems()
        if problems:
            raise ConfigError("; ".join(problems))
        return self

    @classmethod
    def from_env(
        cls, app_spec: str, environ: Mapping[str, str] | None = None, **given: Any
    ) -> WorkerOptions:
        """Options from `TENURE_WORKER_*` variables; keywords given here win over them."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.metadata.get("internal"):
                continue
            text = env.get(worker_env_name(f.name))
            if f.name == "app_spec" or text is None or f.name in given:
                continue
            values[f.name] = parse_worker_value(f.name, text)
        return cls(app_spec=app_spec, **{**values, **given})


def worker_flag(name: str) -> str:
    flag: str | None = next(f for f in fields(WorkerOptions) if f.name == name).metadata["flag"]
    return flag or "--" + name.replace("_", "-")


def worker_env_name(name: str) -> str:
    return WORKER_ENV_PREFIX + worker_flag(name).removeprefix("--").replace("-", "_").upper()


def split_queues(text: str) -> tuple[str, ...]:
    return tuple(q.strip() for q in text.split(","))


def split_weights(entries: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """("high=3", "default=1") -> (("high", "default"), (3, 1)); names alone -> (names, ())
    for strict order. A queue given without a weight among weighted ones weighs 1."""
    if not any("=" in e for e in entries):
        return entries, ()
    names, weights = [], []
    for entry in entries:
        name, _, weight = entry.partition("=")
        text = weight.strip() if "=" in entry else "1"
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(
                f"--queues: expected NAME or NAME=WEIGHT (a whole number >= 1), got {entry!r}"
            )
        names.append(name.strip())
        weights.append(int(text))
    return tuple(names), tuple(weights)


def weighted_order(
    queues: tuple[str, ...], weights: tuple[int, ...], rng: random.Random
) -> tuple[str, ...]:
    """The order one fetch tries the queues in: as given without weights (strict priority);
    with weights, drawn without replacement in proportion to them, so that over many fetches
    each queue is tried first in its share (Sidekiq's weighted queues): a busy `high` cannot
    starve `default`, and a queue with nothing ready costs only its turn."""
    if not weights:
        return queues
    left = list(zip(queues, weights, strict=True))
    order = []
    while left:
        pick = rng.uniform(0, sum(w for _, w in left))
        for i, (name, weight) in enumerate(left):
            pick -= weight
            if pick <= 0 or i == len(left) - 1:
                order.append(name)
                del left[i]
                break
    return tuple(order)


_PARSERS: dict[str, Callable[[str], Any]] = {
    "queues": split_queues,
    "concurrency": int,
    "lease": float,
    "grace": float,
    "unknown_grace": float,
    "max_jobs": int,
    "max_time": float,
    "memory_mb": float,
    "metrics_port": int,
    "metrics_host": str,
    "burst": lambda text: text.strip().lower() in ("1", "true", "yes", "on"),
}


def parse_worker_value(name: str, text: str) -> Any:
    try:
        return _PARSERS[name](text)
    except ValueError:
        raise ConfigError(
            f"${worker_env_name(name)}: expected {_PARSERS[name].__name__}, got {text!r}"
        ) from None

"""Every setting in one place: what a job and a worker can be told, their defaults, the
environment variables that set them, and one validation that says "expected X, got Y".

A job's settings are JobOptions: `@app.job` keywords, defaults and checks written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from tenure.errors import ConfigError
from tenure.guards import GuardSpec, KeyFunction, make_spec
from tenure.retry import Backoff, Policy, validate_policy

# The environment variables tenure reads, each in one place.
URL_ENV = "TENURE_URL"
ENCRYPTION_KEY_ENV = "TENURE_ENCRYPTION_KEY"
LOG_FORMAT_ENV = "TENURE_LOG_FORMAT"
DASHBOARD_TOKEN_ENV = "TENURE_DASHBOARD_TOKEN"
DEBUG_ENV = "TENURE_DEBUG"


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
    transactional: bool = False

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
        return cls(**settings)

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

    def guards(self) -> GuardSpec:
        return make_spec(
            unique=self.unique,
            unique_for=self.unique_for,
            unique_until=self.unique_until,
            overlap=self.overlap,
            overlap_delay=self.overlap_delay,
            rate_limit=self.rate_limit,
            rate_key=self.rate_key,
        )

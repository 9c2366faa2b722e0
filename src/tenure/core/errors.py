"""Exceptions a tenure user may see. Each docstring is the default message."""

from __future__ import annotations


class TenureError(Exception):
    """tenure could not do what was asked."""


class PayloadError(TenureError, ValueError):
    """The job's arguments cannot be stored as a JSON payload."""


class DecryptionUnavailable(PayloadError):
    """This process cannot open an encrypted payload: it lacks the key or the cryptography
    package. The payload may be sound: a process that has them opens it."""


class ConfigError(TenureError, ValueError):
    """A job or worker setting is invalid."""


class UnknownJob(TenureError, LookupError):
    """No job of that name is registered in this app."""


class JobNotFound(TenureError, LookupError):
    """No job with that id exists in the store."""


class CancelRefused(TenureError):
    """The job cannot be cancelled: it has finished already."""


class StoreUnavailable(TenureError, ConnectionError):
    """The store cannot be reached."""


class StoreMisconfigured(TenureError):
    """The store refused the connection for a reason retrying will not fix: the database or
    role does not exist, authentication failed, or the URL is malformed."""


class JobTransactionEnded(TenureError):
    """The job committed or rolled back the connection of ctx.transaction() itself, so its
    writes can no longer be committed together with its success."""


class JobFailed(TenureError):
    """The job failed for good (no try left, or a permanent error): `error` says why."""

    def __init__(self, message: str, *, job_id: str, error: str | None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.error = error  # the job's last error, as `tenure jobs show` prints it


class JobCancelled(TenureError):
    """The job was cancelled before it succeeded (by a person, or with its batch)."""

    def __init__(self, message: str, *, job_id: str, error: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.error = error


class JobTimeout(BaseException):
    """The attempt ran past its timeout; clean up quickly, the worker kills it soon.

    A BaseException (like KeyboardInterrupt) so that a job's broad `except Exception`
    does not swallow it by accident.
    """


class Snooze(TenureError):
    """The job put itself off: `raise tenure.Snooze(30)` (or `ctx.snooze(30)`) ends this
    attempt `deferred` and runs the job again after that many seconds, with no try used
    (Oban's {:snooze, s}, Dramatiq's Retry(delay=), Celery's self.retry(countdown=))."""

    def __init__(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise TypeError(f"Snooze: expected seconds > 0, got {seconds!r}")
        if not 0 < seconds < float("inf"):
            raise ValueError(f"Snooze: expected seconds > 0, got {seconds!r}")
        super().__init__(f"snoozed for {seconds:g} s")
        self.seconds = float(seconds)


class CancelRequested(BaseException):
    """The job was cancelled while it ran (app.cancel, `tenure jobs cancel`); clean up quickly,
    the worker kills it after its kill_after.

    A BaseException, like JobTimeout, so that a job's broad `except Exception` does not
    swallow it by accident. `tenure.current().cancelled` is True from then on.
    """

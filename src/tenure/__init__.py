"""tenure: background jobs that never run twice by accident."""

from tenure.app import App, BatchHandle
from tenure.context import JobContext, current
from tenure.control import BatchInfo, JobInfo
from tenure.core.batch import ranges
from tenure.core.errors import (
    CancelRefused,
    CancelRequested,
    ConfigError,
    JobCancelled,
    JobFailed,
    JobNotFound,
    JobTimeout,
    PayloadError,
    Snooze,
    StoreMisconfigured,
    StoreUnavailable,
    TenureError,
    UnknownJob,
)
from tenure.core.records import AttemptRecord as Attempt
from tenure.job import Chain, ChainHandle, Job, JobHandle, Sig
from tenure.version import __version__ as __version__

__all__ = [
    "App",
    "Attempt",
    "BatchHandle",
    "BatchInfo",
    "CancelRefused",
    "CancelRequested",
    "Chain",
    "ChainHandle",
    "ConfigError",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobInfo",
    "JobNotFound",
    "JobTimeout",
    "PayloadError",
    "Sig",
    "Snooze",
    "StoreMisconfigured",
    "StoreUnavailable",
    "TenureError",
    "UnknownJob",
    "current",
    "ranges",
]

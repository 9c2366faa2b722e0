"""The dashboard's job list: filtered by queue, state, name and how recently it was
dispatched, newest first, and a search by id (an id that exists opens its page).

Queue and state are the store's own filters (`list_jobs`); the name and the time narrow the
newest `SCAN` jobs those give, and the page says so when it looked no further."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tenure.app import App
from tenure.control import JobInfo
from tenure.core.states import JOB_STATES

SCAN = 1000  # jobs read per page view, before the name and time filters
SHOWN = 200
SINCE = {"": 0.0, "1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
PARAMETERS = ("id", "queue", "state", "name", "since")
# every page reads these: the notice a redirect after an action carries
NOTICE_PARAMETERS = ("notice", "n")


def unknown_parameter(params: Mapping[str, str], accepted: tuple[str, ...]) -> str | None:
    """A parameter nothing reads, named with the ones that are read: a typo (`?stat=`)
    otherwise looks like a list that was not filtered."""
    for key in params:
        if key not in accepted and key not in NOTICE_PARAMETERS:
            return f"unknown parameter {key!r}; the accepted ones are {', '.join(accepted)}"
    return None


@dataclass(frozen=True)
class JobFilters:
    queue: str = ""
    state: str = ""
    name: str = ""
    since: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> tuple[JobFilters, str | None]:
        """The filters a query string asks for, and what is wrong with it (None: nothing)."""
        unknown = unknown_parameter(params, PARAMETERS)
        if unknown is not None:
            return cls(), unknown
        got = cls(
            queue=params.get("queue", "").strip(),
            state=params.get("state", "").strip(),
            name=params.get("name", "").strip(),
            since=params.get("since", "").strip(),
        )
        if got.state and got.state not in JOB_STATES:
            return cls(), f"state: expected one of {', '.join(JOB_STATES)}, got {got.state!r}"
        if got.since not in SINCE:
            return cls(), f"since: expected one of {', '.join(s for s in SINCE if s)}"
        return got, None

    @property
    def active(self) -> bool:
        return any((self.queue, self.state, self.name, self.since))


@dataclass(frozen=True)
class JobList:
    jobs: list[JobInfo]
    scanned: int  # how many the store gave before the name and time filters
    more: bool  # the scan stopped at SCAN: older matches may exist


def job_list(app: App, f: JobFilters) -> JobList:
    found = app.list_jobs(state=f.state or None, queue=f.queue or None, limit=SCAN)
    now = app.now()
    wanted = [
        j
        for j in found
        if (not f.name or f.name.lower() in j.name.lower())
        and (not f.since or j.created_at >= now - SINCE[f.since])
    ]
    return JobList(wanted[:SHOWN], len(found), len(found) >= SCAN)

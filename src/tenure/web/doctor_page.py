"""The doctor's findings for the dashboard: the same `diagnose` that `tenure doctor` runs, done
in a worker thread and kept for a short while, since it reads the project's files."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

# The doctor reads every deployment file and job module; once a minute is plenty for a page.
KEEP_S = 60.0


@dataclass(frozen=True)
class FindingRow:
    rule: str
    severity: str
    message: str
    fix: str
    location: str
    job: str | None


@dataclass(frozen=True)
class DoctorResult:
    ran_at: float
    findings: list[FindingRow] = field(default_factory=list)
    summary: str = ""
    message: str | None = None  # set when the doctor could not run here

    def as_json(self) -> dict[str, Any]:
        return {
            "ran_at": self.ran_at,
            "summary": self.summary,
            "message": self.message,
            "findings": [f.__dict__ for f in self.findings],
        }


class DoctorRunner:
    def __init__(self, app_spec: str | None, root: str) -> None:
        self.app_spec = app_spec
        self.root = root
        self._last: DoctorResult | None = None
        self._lock = threading.Lock()

    def result(self, *, fresh: bool = False) -> DoctorResult:
        with self._lock:
            last = self._last
            if fresh or last is None or time.time() - last.ran_at > KEEP_S:
                last = self._last = run_doctor(self.app_spec, self.root)
            return last


def run_doctor(app_spec: str | None, root: str) -> DoctorResult:
    hint = f"run `tenure doctor --app {app_spec or 'MODULE:ATTR'} {root}` in a terminal"
    if app_spec is None:
        return DoctorResult(
            time.time(), message=f"this dashboard was started without --app; {hint}"
        )
    try:
        from tenure.doctor import diagnose
        from tenure.doctor.output import summary
    except ImportError as exc:
        return DoctorResult(
            time.time(), message=f"the doctor is not available here ({exc}); {hint}"
        )
    try:
        report = diagnose(app_spec, root)
    except Exception as exc:  # the page must say why, not fail: the rest of the dashboard works
        return DoctorResult(time.time(), message=f"the doctor could not run: {exc}; {hint}")
    rows = [
        FindingRow(
            rule=f.rule,
            severity=f.severity,
            message=f.message,
            fix=f.fix,
            location=str(f.location),
            job=f.job,
        )
        for f in report.findings
    ]
    return DoctorResult(time.time(), rows, summary(report))

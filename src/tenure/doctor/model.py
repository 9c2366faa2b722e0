"""The clock model: every number that decides whether a job runs twice, with where it came from.

A value without a source is a guess; the doctor never prints one. Defaults are values too, with
a source that names the platform whose default it is, so a report can say "Kubernetes default,
not set in deploy/worker.yaml" instead of leaving a person to wonder where 30 s came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Source:
    """Where a value was read: a file and line, or the default that applies (path None)."""

    path: str | None = None
    line: int | None = None
    note: str = ""

    def __str__(self) -> str:
        if self.path is None:
            return self.note or "default"
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where} ({self.note})" if self.note else where

    @property
    def is_default(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class Value:
    """One clock or limit. `amount` None means unbounded (no timeout, systemd `infinity`)."""

    label: str
    amount: float | None
    unit: str  # "s" or "MB"
    source: Source

    def text(self) -> str:
        return f"{self.label} {self.amount_text()} ({self.source})"

    def amount_text(self) -> str:
        if self.amount is None:
            return "unbounded"
        return f"{self.amount:g} {self.unit}"


@dataclass(frozen=True)
class Setting:
    """A setting that is not a number: a stop signal, a kill mode."""

    label: str
    value: str
    source: Source

    def text(self) -> str:
        return f"{self.label} {self.value} ({self.source})"


@dataclass
class Launch:
    """One place a `tenure worker` is started: a Compose service, a Kubernetes container, a
    systemd unit, a supervisord program or a Procfile line, with the clocks around it."""

    platform: str  # compose | kubernetes | systemd | supervisord | procfile | assumed
    name: str
    source: Source
    queues: tuple[str, ...]
    concurrency: int
    lease: Value
    grace: Value
    memory_mb: Value | None  # the worker's own --memory (per child process)
    platform_grace: Value | None  # time from the stop signal to SIGKILL, what the worker gets
    stop_signal: Setting | None = None
    memory_limit: Value | None = None  # the platform's hard memory limit (MB)
    # Set when the platform's final SIGKILL reaches the worker but not its job processes.
    orphans_children: Setting | None = None
    problems: list[str] = field(default_factory=list)  # options the worker itself would refuse
    # The unit the platform stops: a Compose service's key line, a container's `- name:`, a
    # `[program:x]` or `[Service]` header. Deployment findings about a platform default go
    # here (bench/doctor_corpus/CONVENTION.md); None: the command line is the unit.
    unit: Source | None = None

    def stop_site(self, value: Value | Setting | None) -> Source:
        """Where a finding about the platform's `value` belongs: the line that sets it, else
        the unit's key line, else the command."""
        if value is not None and value.source.path:
            return value.source
        return self.unit or self.source


@dataclass
class ClientCall:
    """A network call found in a job's code and the timeout that bounds it."""

    key: int  # identifies the call (or client constructor) that sets the bound
    library: str  # requests, httpx, urllib, aiohttp, boto3, smtplib, socket
    call: str  # as written, e.g. "requests.get"
    timeout: Value  # amount None: nothing bounds it
    source: Source
    via: str = ""  # the helper function it sits in, when not the job itself


@dataclass
class JobModel:
    """A job as the doctor sees it: the runtime definition when the app loaded, else the AST's."""

    name: str
    queue: str
    source: Source  # the decorator
    timeout: Value | None  # None: written in a way the doctor cannot resolve
    kill_after: Value
    tries: int | None
    tries_source: Source
    has_retry_until: bool
    is_async: bool = False
    registered: bool = True  # False: found by AST, unknown to the loaded app
    keywords: dict[str, Source] = field(default_factory=dict)  # decorator keywords present
    calls: list[ClientCall] = field(default_factory=list)
    path: str | None = None  # the file that defines it, as an absolute path
    # How long it really runs: the p95 of its recorded attempts, when the store has enough.
    measured: Value | None = None


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str  # what will go wrong, in plain words
    fix: str  # the one-line fix
    location: Source
    clocks: tuple[Value | Setting, ...] = ()
    job: str | None = None


@dataclass(frozen=True)
class Skipped:
    """A file or check the doctor did not read, and why; never silent, never a crash."""

    path: str
    reason: str


@dataclass
class Report:
    root: str
    app_spec: str | None
    jobs: list[JobModel] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files_read: int = 0
    notes: list[str] = field(default_factory=list)  # what the doctor chose by itself, and why

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def exit_code(self, *, strict: bool) -> int:
        failing = {"error", "warning"} if strict else {"error"}
        return 1 if any(f.severity in failing for f in self.findings) else 0

"""The signal that stops a Celery worker: a Compose service's `stop_signal`, else the
`STOPSIGNAL` of the Dockerfile its image is built from (also for a Kubernetes container
running that image), a supervisord program's `stopsignal=`, a systemd unit's `KillSignal=`.

Celery's worker (celery/apps/worker.py) shuts down warm on SIGTERM and on a first SIGINT:
it stops taking tasks and lets the running ones finish. SIGQUIT is its cold shutdown (the
running tasks are terminated at once), SIGKILL kills it outright, and any other signal
(SIGHUP restarts it, SIGUSR1 dumps tracebacks) stops nothing until the platform's SIGKILL
at the end of the grace. Either way, tasks running at a deploy die mid-run.

The environment variable REMAP_SIGTERM=SIGQUIT (billiard.common, read by
celery/apps/worker.py; Celery's Workers Guide, "Cold Shutdown") makes the worker treat SIGTERM
as SIGQUIT: the platform's ordinary SIGTERM becomes the cold shutdown. It is read where the
worker's process gets it: a `REMAP_SIGTERM=SIGQUIT celery ...` prefix on the command line, the
Compose service's or Kubernetes container's environment, or the image's `ENV`."""

from __future__ import annotations

import os
import re

from tenure.doctor.dockerfile import env_settings, instructions
from tenure.doctor.laravel.worker import ArtisanWorker
from tenure.doctor.model import Finding, Setting, Source
from tenure.doctor.readers.ini import read_ini
from tenure.doctor.readers.units import signal_name
from tenure.doctor.rules import finding, once_per_unit
from tenure.doctor.tie import Runner
from tenure.doctor.walk import is_dockerfile

WARM = {"SIGTERM", "SIGINT"}
WHAT = {"SIGQUIT": "Celery's cold shutdown: the running tasks are terminated at once",
        "SIGKILL": "no shutdown at all: the worker and its tasks are killed outright"}  # fmt: skip
OTHER = "not a shutdown request for Celery: the worker keeps running its tasks until the "
OTHER += "platform kills it when the grace ends"


def read_stop_signals(
    root: str, workers: list[ArtisanWorker], runners: list[Runner], scripts: dict[str, str]
) -> None:
    """Set each worker's stop_signal where the project sets one (else Docker's SIGTERM)."""
    by_unit = {(r.unit.path, r.unit.line): r for r in runners if r.unit is not None}
    for w in workers:
        unit = (w.unit.path, w.unit.line) if w.unit is not None else None
        runner = by_unit.get(unit) if unit else None
        signal = _signal(root, w, runner, scripts)
        if signal is None or signal.value == "SIGTERM":
            signal = _remapped(root, w, runner, scripts) or signal
        w.stop_signal = signal


def signal_findings(workers: list[ArtisanWorker]) -> list[Finding]:
    out = []
    for w in workers:
        signal = w.stop_signal
        if signal is None or signal.value in WARM:
            continue
        what = WHAT.get(signal.value, OTHER)
        how = (f"has its SIGTERM remapped to {signal.value} (REMAP_SIGTERM)"
               if signal.label == REMAP else f"is stopped with {signal.value}")  # fmt: skip
        out.append(finding(
            "stop-signal-not-graceful",
            f"Celery worker {w.platform} {w.name} {how}, {what}; "
            "Celery's warm shutdown (finish the running tasks, take no new ones) is SIGTERM.",
            "stop it with SIGTERM (remove the stop signal setting) and give the platform a "
            "grace above the longest task",
            signal.source, clocks=(signal,)))  # fmt: skip
    return once_per_unit(out)


def _signal(
    root: str, w: ArtisanWorker, runner: Runner | None, scripts: dict[str, str]
) -> Setting | None:
    if w.platform in ("supervisord", "systemd"):
        return _ini_signal(root, w)
    if runner is not None and runner.signal is not None:
        return runner.signal
    dockerfile = runner.dockerfile if runner is not None else None
    if dockerfile is None and w.platform == "script" and w.unit is None:
        # A worker in an image no deployment file runs: its own Dockerfile's signal.
        own = w.source.path or ""
        dockerfile = own if is_dockerfile(os.path.basename(own)) else None
    return _dockerfile_signal(dockerfile, scripts.get(dockerfile)) if dockerfile else None


REMAP = "REMAP_SIGTERM"
_REMAP = re.compile(r"""(?:^|[\s;'"])(?:export\s+)?REMAP_SIGTERM=["']?(?:SIG)?QUIT\b""")


def _remapped(
    root: str, w: ArtisanWorker, runner: Runner | None, scripts: dict[str, str]
) -> Setting | None:
    """REMAP_SIGTERM=SIGQUIT where the worker's process reads its environment: on its own
    command line, in its runner's environment, or in the image's ENV."""
    at = w.source
    text = scripts.get(at.path or "") if at.path in scripts else _file(root, at.path or "")
    lines = (text or "").splitlines()
    if at.line is not None and 0 < at.line <= len(lines) and _REMAP.search(lines[at.line - 1]):
        return Setting(REMAP, "SIGQUIT", Source(at.path, at.line))
    if runner is not None:
        value = (runner.env or {}).get(REMAP)
        if value is not None and _quit(value[0]):
            return Setting(REMAP, "SIGQUIT", runner.unit or Source(note=value[1]))
        dockerfile = runner.dockerfile
        if dockerfile and dockerfile in scripts:
            found = [e for e in env_settings(dockerfile, scripts[dockerfile]) if e.key == REMAP]
            if found and _quit(found[-1].value):
                return Setting(REMAP, "SIGQUIT", found[-1].source)
    return None


def _quit(value: str) -> bool:
    return signal_name(value.strip("\"'")) == "SIGQUIT"


def _file(root: str, path: str) -> str | None:
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            return handle.read(1024 * 1024)
    except OSError:
        return None


def _dockerfile_signal(path: str, text: str | None) -> Setting | None:
    """The last STOPSIGNAL of the Dockerfile (of its last stage: the image that runs)."""
    found = None
    for line, word, rest in instructions(text or ""):
        if word == "FROM":
            found = None
        elif word == "STOPSIGNAL":
            name = signal_name(rest.strip("\"'"))
            found = Setting("Dockerfile STOPSIGNAL", name, Source(path, line)) if name else None
    return found


def _ini_signal(root: str, w: ArtisanWorker) -> Setting | None:
    path = w.source.path or ""
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    lines = text.splitlines()
    header = w.unit.line if w.unit is not None and w.unit.path == path else None
    if header is None or not 0 < header <= len(lines):
        return None
    section = lines[header - 1].strip().strip("[]").strip()
    key = "stopsignal" if w.platform == "supervisord" else "KillSignal"
    entries = [e for e in read_ini(text, backslash_continues=w.platform == "systemd")
               if e.section == section and e.key == key]  # fmt: skip
    if not entries:
        return None
    name = signal_name(entries[-1].value)
    label = "supervisord stopsignal" if w.platform == "supervisord" else "systemd KillSignal"
    return Setting(label, name, Source(path, entries[-1].line)) if name else None

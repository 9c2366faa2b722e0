"""Celery's own daemonizing layout: a systemd unit running `${CELERY_BIN} multi start` under
`sh -c`, its options in the EnvironmentFile (/etc/conf.d/celery, kept in the project as
celery.conf). The options are read from that file and said to be; without it they are
unknown, never "no time limit"."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\nCELERY_WORKER_PREFETCH_MULTIPLIER = 1\n"
# Cut from celery/celery docs/userguide/daemonizing.rst (systemd: celery.service and the
# /etc/conf.d/celery example configuration).
UNIT = """[Unit]
Description=Celery Service
After=network.target

[Service]
Type=forking
User=celery
Group=celery
EnvironmentFile=/etc/conf.d/celery
WorkingDirectory=/opt/celery
{stop}ExecStart=/bin/sh -c '${{CELERY_BIN}} -A $CELERY_APP multi start $CELERYD_NODES \\
    --pidfile=${{CELERYD_PID_FILE}} --logfile=${{CELERYD_LOG_FILE}} \\
    --loglevel="${{CELERYD_LOG_LEVEL}}" $CELERYD_OPTS'
ExecStop=/bin/sh -c '${{CELERY_BIN}} multi stopwait $CELERYD_NODES \\
    --pidfile=${{CELERYD_PID_FILE}} --logfile=${{CELERYD_LOG_FILE}} \\
    --loglevel="${{CELERYD_LOG_LEVEL}}"'
Restart=always

[Install]
WantedBy=multi-user.target
"""
CONF = """# Name of nodes to start
# here we have a single node
CELERYD_NODES="w1"
# Absolute or relative path to the 'celery' command:
CELERY_BIN="/usr/local/bin/celery"
# App instance to use
CELERY_APP="proj"
# How to call manage.py
CELERYD_MULTI="multi"
# Extra command-line arguments to the worker
CELERYD_OPTS="--time-limit=300 --concurrency=8"
CELERYD_PID_FILE="/var/run/celery/%n.pid"
CELERYD_LOG_FILE="/var/log/celery/%n%I.log"
CELERYD_LOG_LEVEL="INFO"
"""


def run(
    tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    write(tmp_path, {"proj/settings.py": SETTINGS, **files})
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="proj/settings.py")
    found = [f"{f.rule} {f.location} " + " / ".join(c.text() for c in f.clocks)
             for f in report.findings]  # fmt: skip
    return found, [s.reason for s in report.skipped]


def test_options_from_the_environment_file_against_the_default_stop_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = run(tmp_path, {"deploy/celery.service": UNIT.format(stop=""),
                              "deploy/celery.conf": CONF}, monkeypatch)  # fmt: skip
    (line,) = found
    assert line.startswith("celery-grace-below-time-limit deploy/celery.service:5 ")
    assert "task time limit 300 s" in line and "systemd TimeoutStopSec 90 s" in line
    assert "from the unit's environment (deploy/celery.conf)" in line


def test_quiet_when_the_unit_waits_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = UNIT.format(stop="TimeoutStopSec=600\n")
    found, _ = run(tmp_path, {"deploy/celery.service": unit, "deploy/celery.conf": CONF},
                   monkeypatch)  # fmt: skip
    assert found == []


def test_without_the_environment_file_the_limit_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, skipped = run(tmp_path, {"deploy/celery.service": UNIT.format(stop="")}, monkeypatch)
    assert found == []  # not celery-task-unbounded: $CELERYD_OPTS may hold a --time-limit
    assert any("$CELERYD_OPTS" in s and "unknown" in s for s in skipped)

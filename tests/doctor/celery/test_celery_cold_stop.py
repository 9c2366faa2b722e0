"""A systemd unit whose ExecStop sends SIGQUIT (Celery's cold shutdown) or SIGKILL gives the
worker no grace, whatever TimeoutStopSec says: the finding goes on the ExecStop line. Cut from
a bare-metal service/…-celery.service unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

UNIT = """[Unit]
Description=Start Celery Service

[Service]
Type=simple
User=odm
WorkingDirectory=/srv/app
ExecStart=/srv/app/venv/bin/celery -A worker worker --autoscale 8,2 --loglevel=warn
ExecStop=/bin/kill -s {signal} $MAINPID
Restart=on-failure
"""
SETTINGS = "CELERY_BROKER_URL = 'redis://localhost:6379/0'\nCELERY_TASK_TIME_LIMIT = 60\n"


@pytest.mark.parametrize(
    ("signal", "expected"),
    [("QUIT", ["celery-grace-below-time-limit service/app-celery.service:9"]),
     ("KILL", ["celery-grace-below-time-limit service/app-celery.service:9"]),
     ("TERM", [])],  # the quiet twin: a warm shutdown within systemd's 90 s
)  # fmt: skip
def test_an_exec_stop_that_sends_a_cold_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "service/app-celery.service": UNIT.format(signal=signal)}
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="settings.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report)
             if "grace" in f or "unbounded" in f]  # fmt: skip
    assert found == expected

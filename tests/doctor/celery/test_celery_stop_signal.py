"""The signal that stops a Celery worker: Celery shuts down warm on SIGTERM and SIGINT, cold on
SIGQUIT (celery/apps/worker.py). The image layout is cut from jumpserver/jumpserver's Dockerfile
(`ENTRYPOINT ["./entrypoint.sh"]`, `STOPSIGNAL SIGQUIT`, `CMD ["start", "all"]`) with a Compose
service building it; the SIGINT twin from mozilla/pontoon's docker/Dockerfile (`STOPSIGNAL
SIGINT`); the supervisord one from codalab-competitions' supervisor.conf ([program:webworker]
`stopsignal=QUIT`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = """from celery import Celery
app = Celery("proj", broker="redis://redis:6379/0")
app.conf.task_time_limit = 5
"""
DOCKERFILE = """FROM python:3.11-slim
WORKDIR /opt/proj
COPY . .
ENTRYPOINT ["./entrypoint.sh"]
EXPOSE 8080
{signal}
CMD ["start", "all"]
"""
ENTRYPOINT = """#!/bin/bash
action="${1-start}"
if [[ "$action" == "bash" ]]; then
    bash
else
    exec celery -A proj worker -l INFO
fi
"""
COMPOSE = """services:
  worker:
    build: .
{extra}    restart: always
"""


def image(signal: str, extra: str = "") -> dict[str, str]:
    return {"proj/celery.py": SETTINGS, "Dockerfile": DOCKERFILE.format(signal=signal),
            "entrypoint.sh": ENTRYPOINT,
            "docker-compose.yml": COMPOSE.format(extra=extra)}  # fmt: skip


def signals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[str]:
    write(tmp_path, files)
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="proj/celery.py")
    return [" ".join(f.split()[:2]) for f in located(report, "stop-signal-not-graceful")]


@pytest.mark.parametrize("signal", ["STOPSIGNAL SIGQUIT", "STOPSIGNAL 9", "STOPSIGNAL SIGUSR1"])
def test_an_images_stopsignal_that_is_no_warm_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal: str
) -> None:
    found = signals(tmp_path, monkeypatch, image(signal))
    assert found == ["stop-signal-not-graceful Dockerfile:6"]


@pytest.mark.parametrize("signal", ["STOPSIGNAL SIGINT", "STOPSIGNAL 15", "", "# STOPSIGNAL 3"])
def test_quiet_twin_sigint_and_sigterm_are_warm_shutdowns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal: str
) -> None:
    assert signals(tmp_path, monkeypatch, image(signal)) == []


def test_compose_stop_signal_overrides_the_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = image("STOPSIGNAL SIGQUIT", "    stop_signal: SIGTERM\n")
    assert signals(tmp_path, monkeypatch, files) == []
    files = image("", "    stop_signal: SIGQUIT\n")
    found = signals(tmp_path, monkeypatch, files)
    assert found == ["stop-signal-not-graceful docker-compose.yml:4"]


SUPERVISOR = """[program:webworker]
command=/venv/bin/celery worker -A proj -l info -Q site-worker -n site-worker -Ofair
directory=/srv/proj
stopsignal={signal}
umask = 002
stopwaitsecs=60
"""


@pytest.mark.parametrize(("signal", "found"),
                         [("QUIT", ["stop-signal-not-graceful deploy/supervisor.conf:4"]),
                          ("TERM", [])])  # fmt: skip
def test_a_supervisord_programs_stopsignal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal: str, found: list[str]
) -> None:
    files = {"proj/celery.py": SETTINGS,
             "deploy/supervisor.conf": SUPERVISOR.format(signal=signal)}  # fmt: skip
    assert signals(tmp_path, monkeypatch, files) == found

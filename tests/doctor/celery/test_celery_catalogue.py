"""Two things that are not the project's own worker's runner: a catalogue of other
applications' Compose files under `templates/` (each runs its own image), and a command that
merely contains the word `run` (`cloudflared tunnel run`) next to an s6 service file called
`run`. Cut from coollabsio/coolify (templates/compose/cloudflared.yaml and the image's
docker/production/etc/s6-overlay/s6-rc.d/*/run), with the worker a Celery one."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\nCELERY_TASK_TIME_LIMIT = 600\n"
DOCKERFILE = """FROM python:3.12-slim
COPY --chmod=755 docker/production/etc/s6-overlay/ /etc/s6-overlay/
ENTRYPOINT ["/init"]
"""
RUN = """#!/command/execlineb -P
foreground { echo "Starting worker" }
celery -A app worker -l info
"""
TUNNEL = """services:
  cloudflared:
    image: cloudflare/cloudflared:latest
    command: tunnel --no-autoupdate run
"""
APP = """services:
  app:
    build: {{context: ., dockerfile: Dockerfile}}
{grace}"""


@pytest.mark.parametrize(
    ("tunnel_at", "grace", "expected"),
    [("templates/compose/cloudflared.yaml", "", ["docker-compose.yml:2"]),
     ("deploy/cloudflared.yaml", "", ["docker-compose.yml:2"]),  # `run` is no script's name
     ("templates/compose/cloudflared.yaml", "    stop_grace_period: 11m\n", [])],  # quiet twin
)  # fmt: skip
def test_only_the_service_running_the_image_is_the_workers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tunnel_at: str,
    grace: str,
    expected: list[str],
) -> None:
    files = {"settings.py": SETTINGS, "Dockerfile": DOCKERFILE,
             "docker/production/etc/s6-overlay/s6-rc.d/worker/run": RUN,
             tunnel_at: TUNNEL, "docker-compose.yml": APP.format(grace=grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    found = located(report, "celery-grace-below-time-limit")
    assert [f.split(" ")[1] for f in found] == expected

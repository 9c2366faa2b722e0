"""The project's published image, run by name from Compose variants that never build it: the
Dockerfile's `LABEL org.opencontainers.image.source` names the repository the image is
published from (`ghcr.io/OWNER/NAME`), which ties the image's s6 worker to those services.
And a project's own environment helper (`get_int_from_env("KEY", 1800)`) gives its default.
Cut from paperless-ngx (Dockerfile labels, s6-rc.d/svc-worker/run with its two exec arms,
docker/compose/docker-compose.*.yml, settings `CELERY_TASK_TIME_LIMIT`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = """import os
from typing import Final

def get_int_from_env(key: str, default: int) -> int:
    return int(os.getenv(key, default))

CELERY_BROKER_URL = os.getenv("PAPERLESS_REDIS", "redis://localhost:6379")
CELERY_TASK_TIME_LIMIT: Final[int] = get_int_from_env("PAPERLESS_WORKER_TIMEOUT", 1800)
"""
DOCKERFILE = """FROM python:3.12-slim
LABEL org.opencontainers.image.authors="paperless-ngx team <hello@paperless-ngx.com>"
LABEL org.opencontainers.image.source="https://github.com/paperless-ngx/paperless-ngx"
COPY ./docker/rootfs /
ENTRYPOINT ["/init"]
"""
RUN = """#!/command/with-contenv /usr/bin/bash
cd ${PAPERLESS_SRC_DIR}
if [[ -n "${USER_IS_NON_ROOT}" ]]; then
	exec /usr/local/bin/celery --app paperless worker --loglevel INFO --without-mingle
else
	exec s6-setuidgid paperless /usr/local/bin/celery --app paperless worker --loglevel INFO
fi
"""
COMPOSE = """services:
  broker:
    image: docker.io/library/redis:8
  webserver:
    image: {image}
{grace}    restart: unless-stopped
"""
RUN_PATH = "docker/rootfs/etc/s6-overlay/s6-rc.d/svc-worker/run"
IMAGE = "ghcr.io/paperless-ngx/paperless-ngx:latest"


def findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, image: str = IMAGE, grace: str = ""
) -> list[str]:
    compose = COMPOSE.format(image=image, grace=grace)
    files = {"src/paperless/settings.py": SETTINGS, "Dockerfile": DOCKERFILE, RUN_PATH: RUN,
             "docker/compose/docker-compose.sqlite.yml": compose,
             "docker/compose/docker-compose.postgres.yml": compose}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="src/paperless/settings.py")  # fmt: skip
    return sorted(located(report, "celery-grace-below-time-limit"))


def test_each_variant_running_the_published_image_gets_one_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = findings(tmp_path, monkeypatch)
    assert [f.split(" ")[1] for f in found] == [
        "docker/compose/docker-compose.postgres.yml:4",
        "docker/compose/docker-compose.sqlite.yml:4",
    ]  # one per service, though its script starts the worker on two lines
    assert "up to 1800 s" in found[0] and "10 s after SIGTERM" in found[0]


def test_quiet_twin_an_image_of_another_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert findings(tmp_path, monkeypatch, image="ghcr.io/someone-else/paperless-ngx:2") == []


def test_quiet_twin_the_service_waits_past_the_helper_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert findings(tmp_path, monkeypatch, grace="    stop_grace_period: 31m\n") == []

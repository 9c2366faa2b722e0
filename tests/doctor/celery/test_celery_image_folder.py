"""A Compose file that runs the project's published image by name (no service builds it, no
label claims it): the image is named after the folder whose Dockerfile builds it, and its
entrypoint picks the process by SERVICE_ROLE through functions each `case` branch calls. Cut
from a research assistant's docker/docker-compose.yml and surfsense_backend/scripts/docker/
entrypoint.sh."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write
from tenure.doctor.shell_dispatch import env_dispatch_alternatives

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\nCELERY_TASK_TIME_LIMIT = 28800\n"
ENTRYPOINT = """#!/bin/bash
SERVICE_ROLE="${SERVICE_ROLE:-all}"

start_api() {
    uvicorn main:app &
}

start_worker() {
    celery -A app.celery_app worker --loglevel=info -Ofair &
}

case "${SERVICE_ROLE}" in
    api)
        start_api
        ;;
    worker)
        start_worker
        ;;
    all)
        start_api
        start_worker
        ;;
esac
wait
"""
DOCKERFILE = """FROM python:3.12
COPY . /app
CMD ["/app/scripts/docker/entrypoint.sh"]
"""
COMPOSE = """services:
  backend:
    image: ghcr.io/owner/{image}:latest
    environment:
      SERVICE_ROLE: api
  celery_worker:
    image: ghcr.io/owner/{image}:latest
    environment:
      SERVICE_ROLE: worker
"""


def test_each_way_into_a_function_has_its_own_tests() -> None:
    ways = env_dispatch_alternatives(ENTRYPOINT, 9)
    assert [labels for chain in ways for _, _, labels in chain] == [{"worker"}, {"all"}]


@pytest.mark.parametrize(
    ("image", "found"),
    [("app-backend", ["celery-grace-below-time-limit docker/docker-compose.yml:6"]),
     ("other-service", [])],
)  # fmt: skip
def test_the_image_named_after_the_folder_is_built_from_its_dockerfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, found: list[str]
) -> None:
    write(tmp_path, {"settings.py": SETTINGS,
                     "docker/docker-compose.yml": COMPOSE.format(image=image),
                     "app_backend/Dockerfile": DOCKERFILE,
                     "app_backend/scripts/docker/entrypoint.sh": ENTRYPOINT})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    rules = [" ".join(f.split()[:2]) for f in located(report)]
    assert [r for r in rules if r.startswith(("celery-grace", "celery-task"))] == found

"""An image entrypoint that picks what to run with `if`/`elif [ "$1" = "..." ]` (not `case`),
kept in `docker/release/build/` next to its Dockerfile (a `build/` folder that is the image's
source, not build output), run by a Compose service by image name. An `e2e/` setup is a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, write
from tenure.doctor import diagnose
from tenure.doctor.walk import holds_image, is_development_name

# Cut from google/timesketch (docker/release/build/docker-entrypoint.sh, Dockerfile-release,
# docker/release/docker-compose.yml, data/timesketch.conf).
ENTRYPOINT = """#!/bin/bash

if [ "$1" = "timesketch-web" ]; then
  gunicorn --bind 0.0.0.0:5000 --timeout 600 timesketch.wsgi:application

elif [ "$1" = "timesketch-worker" ]; then
  celery -A timesketch.lib.tasks worker \\
         --logfile=/var/log/timesketch/worker.log \\
         --loglevel="${WORKER_LOG_LEVEL}"
fi
"""
DOCKERFILE = """FROM ubuntu:24.04
COPY docker/release/build/docker-entrypoint.sh /
RUN chmod a+x /docker-entrypoint.sh
ENTRYPOINT ["/docker-entrypoint.sh"]
"""
COMPOSE = """services:
  timesketch-web:
    image: us-docker.pkg.dev/osdfir-registry/timesketch/timesketch:${{TIMESKETCH_VERSION}}
    restart: always
    command: timesketch-web
{worker}"""
WORKER = """  timesketch-worker:
    image: us-docker.pkg.dev/osdfir-registry/timesketch/timesketch:${TIMESKETCH_VERSION}
    restart: always
    command: timesketch-worker
"""
CONF = 'CELERY_BROKER_URL = "redis://127.0.0.1:6379"\nCELERY_RESULT_BACKEND = "redis://127.0.0.1:6379"\n'
E2E = '#!/bin/bash\nexec bash -c "celery -A timesketch.lib.tasks worker --loglevel info & wait"\n'


def run(tmp_path: Path, worker: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    files = {"docker/release/build/docker-entrypoint.sh": ENTRYPOINT,
             "docker/release/build/Dockerfile-release": DOCKERFILE,
             "docker/release/docker-compose.yml": COMPOSE.format(worker=worker),
             "docker/e2e/docker-entrypoint.sh": E2E, "data/timesketch.conf": CONF}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="data/timesketch.conf")
    return located(report)


def test_elif_branch_run_by_the_service_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = run(tmp_path, WORKER, monkeypatch)
    assert found.startswith("celery-task-unbounded docker/release/docker-compose.yml:6 ")
    assert "run by Compose service timesketch-worker" in found


def test_only_the_web_branch_run_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, "", monkeypatch) == []  # and the e2e worker is a test setup


def test_an_e2e_folder_is_a_test_setup_and_a_build_folder_with_a_dockerfile_is_source(
    tmp_path: Path,
) -> None:
    assert is_development_name("docker/e2e/docker-entrypoint.sh")
    assert not is_development_name("docker/release/build/docker-entrypoint.sh")
    (tmp_path / "build").mkdir()
    assert not holds_image(str(tmp_path / "build"))  # build output
    (tmp_path / "build" / "Dockerfile-release").write_text("FROM ubuntu\n")
    assert holds_image(str(tmp_path / "build"))

"""One image whose entrypoint picks the process by an environment variable, with the worker
in a nested `if` inside its branch; each Compose service sets the variable, and the worker's
extra flags come from the service's environment. Cut from a network-management suite's
images/common/init_command.sh and docker-compose.yml."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write
from tenure.doctor.shell_dispatch import env_dispatch_chain

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
SCRIPT = """#!/bin/bash
if [ "$MODULE_NAME" = 'dashboard' ]; then
	if [ "$SSL" = 'Yes' ]; then nginx_prod; fi
	uwsgi --ini uwsgi.ini
elif [ "$MODULE_NAME" = 'nginx' ]; then
	if [ "$SSL_CERT_MODE" = 'Yes' ]; then
		nginx_prod
	else
		nginx_plain
	fi
	nginx -g 'daemon off;'
elif [ "$MODULE_NAME" = 'celery_monitoring' ]; then
	if [[ "$USE_MONITORING" == "True" ]]; then
		celery -A app worker --queues monitoring --detach \\
			${CELERY_MONITORING_FLAGS}
		tail -f /opt/app/logs/*
	fi
fi
"""
DOCKERFILE = """FROM python:3.12
COPY ./common/ /opt/app/
ENV MODULE_NAME=dashboard
CMD ["bash", "init_command.sh"]
"""
COMPOSE = """services:
  dashboard:
    image: suite/dashboard:edge
    build:
      context: images
      dockerfile: dashboard/Dockerfile
  nginx:
    image: suite/dashboard:edge
    environment:
      - MODULE_NAME=nginx
  celery_monitoring:
    image: suite/dashboard:edge
    environment:
      - MODULE_NAME=celery_monitoring
      - CELERY_MONITORING_FLAGS={flags}
"""


def test_every_environment_test_around_the_line_innermost_first() -> None:
    chain = env_dispatch_chain(SCRIPT, 14)
    assert chain == [("USE_MONITORING", None, {"True"}),
                     ("MODULE_NAME", None, {"celery_monitoring"})]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "found"),
    [("--concurrency=1", ["celery-task-unbounded docker-compose.yml:11"]),
     ("--time-limit=5", [])],
)  # fmt: skip
def test_only_the_service_whose_environment_picks_the_branch_runs_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, found: list[str]
) -> None:
    write(tmp_path, {"settings.py": SETTINGS, "docker-compose.yml": COMPOSE.format(flags=flags),
                     "images/dashboard/Dockerfile": DOCKERFILE,
                     "images/common/init_command.sh": SCRIPT})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    assert [" ".join(f.split()[:2]) for f in located(report)] == found

"""A worker started by a shell function (`exec celery -A app worker -l INFO "$@"`) gets its
queues where the function is called, in the branch the service's command picks. Cut from an
image entrypoint with `celery-worker)` and `celery-exportworker)` branches, the first with an
`if [[ -n "$RUN_MINIMAL" ]]` arm that combines both queues."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

ENTRYPOINT = """#!/bin/bash
start_celery_worker(){
  exec celery -A app worker -l INFO "$@"
}

case "$1" in
    celery-worker)
      if [[ -n "${RUN_MINIMAL}" ]]; then
        start_celery_worker -Q celery,export -n default-worker@%h "${@:2}"
      else
        start_celery_worker -Q celery -n default-worker@%h "${@:2}"
      fi
    ;;
    celery-exportworker)
        start_celery_worker -Q export -n export-worker@%h "${@:2}"
    ;;
esac
"""
DOCKERFILE = """FROM python:3.12
COPY docker/docker-entrypoint.sh /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
"""
COMPOSE = """services:
  celery:
    build: .
    command: celery-worker
  celery-export-worker:
    build: .
    command: celery-exportworker
"""
SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
TASKS = """from celery import shared_task

@shared_task(queue="export", time_limit={limit})
def update_search_data():
    pass

@shared_task(time_limit=5)
def send_mail():
    pass
"""


@pytest.mark.parametrize(
    ("limit", "expected"),
    [("3600", ["celery-grace-below-time-limit docker-compose.yml:5"]),
     ("5", [])],  # the quiet twin: the export task is short too
)  # fmt: skip
def test_queues_given_where_the_function_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "app/tasks.py": TASKS.format(limit=limit),
             "docker/docker-entrypoint.sh": ENTRYPOINT, "Dockerfile": DOCKERFILE,
             "docker-compose.yml": COMPOSE}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="settings.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report)
             if "grace" in f or "unbounded" in f]  # fmt: skip
    # The 3600 s export task is the export worker's only: the default worker's queue is
    # `celery` (RUN_MINIMAL is not set), where the 5 s task runs.
    assert found == expected

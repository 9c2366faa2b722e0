"""Worker options read from variables: `--time-limit="${CELERY_TASK_TIME_LIMIT}"` takes the
value the environment of the service running the script gives it (said where), `${VAR:-600}`
its default (said to be one), and a variable nobody sets is unknown: never "no time limit"."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose
from tenure.doctor.celery.launches import find_celery
from tenure.doctor.readers.worker_command import split_command

# Cut from parsa-mre/dist-recommender (docker-compose.yml, worker/Dockerfile, worker/start.sh,
# worker/worker_app/tasks.py): the Compose service builds the worker image, whose CMD runs
# start.sh; the limits are the service's environment; the app is configured in its constructor.
COMPOSE = """version: "3"

services:
    redis:
        image: redis:latest
    worker:
        build: ./worker
        environment:
            - REDIS_URL=${{REDIS_URL}}
            - CELERY_WORKERS=2
{limits}        restart: always
"""
LIMITS = """            - CELERY_TASK_TIME_LIMIT=3600
            - CELERY_TASK_SOFT_TIME_LIMIT=3540
"""
DOCKERFILE = """FROM python:3.9-slim
WORKDIR /app
COPY worker_app ./worker_app
COPY start.sh /app/start.sh
ENV PYTHONUNBUFFERED=1
CMD ["/app/start.sh"]
"""
START = """#!/bin/bash

cd worker_app
# Start Celery worker
celery -A tasks worker \\
    --loglevel=DEBUG \\
    --concurrency="${{CELERY_WORKERS}}" \\
    --time-limit="{limit}" \\
    --soft-time-limit="${{CELERY_TASK_SOFT_TIME_LIMIT}}"
"""
TASKS = """import os
from celery import Celery

app = Celery("tasks", broker=os.environ.get("REDIS_URL", "redis://redis:6379/0"))


@app.task
def recommend(user_id):
    return user_id
"""


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, limits: str, limit: str
) -> tuple[list[str], list[str]]:
    files = {"docker-compose.yml": COMPOSE.format(limits=limits), "worker/Dockerfile": DOCKERFILE,
             "worker/start.sh": START.format(limit=limit),
             "worker/worker_app/tasks.py": TASKS}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False)  # the app is found by its constructor
    found = [f"{f.rule} {f.location.path}:{f.location.line} {f.clocks[0].text()}"
             for f in report.findings]  # fmt: skip
    return found, [s.reason for s in report.skipped]


def test_limit_from_the_running_service_environment_is_compared_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = run(tmp_path, monkeypatch, limits=LIMITS, limit="${CELERY_TASK_TIME_LIMIT}")
    (line,) = found
    assert line.startswith("celery-grace-below-time-limit docker-compose.yml:6 ")
    assert "3600 s" in line
    assert "CELERY_TASK_TIME_LIMIT=3600 (docker-compose.yml, service worker)" in line


def test_limit_nobody_sets_is_unknown_not_unbounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, skipped = run(tmp_path, monkeypatch, limits="", limit="${CELERY_TASK_TIME_LIMIT}")
    assert found == []  # not celery-task-unbounded: the limit is unknown, and said so
    assert any("time limit is read from an environment variable" in s for s in skipped)


# The `${VAR:-N}` form of Jrcordal/Conectora's entrypoint.worker.sh (`-c
# ${CELERY_WORKER_CONCURRENCY:-4}`), here on the time limit: the default is the value.
def test_default_of_an_unset_variable_is_the_value_and_said_to_be_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = run(tmp_path, monkeypatch, limits="", limit="${CELERY_TASK_TIME_LIMIT:-600}")
    (line,) = found
    assert (
        line.startswith("celery-grace-below-time-limit docker-compose.yml:6 ") and "600 s" in line
    )
    assert "the default of ${CELERY_TASK_TIME_LIMIT:-600}" in line


def test_default_below_the_grace_stays_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, _ = run(tmp_path, monkeypatch, limits="", limit="${CELERY_TASK_TIME_LIMIT:-8}")
    assert found == []


# thomasrosales/feeds docker/scripts/celery.sh runs the worker through poetry; uv, pipenv and
# pdm projects do the same. `poetry show celery` is not a worker.
def test_project_tool_wrappers_are_command_position() -> None:
    found = find_celery(split_command("poetry run celery -A config.celery_app worker -c 2 -l info"))
    assert found is not None and found[1] == "config.celery_app" and found[2]["concurrency"] == "2"
    assert find_celery(split_command("uv run --no-sync celery -A app worker")) is not None
    assert find_celery(split_command("poetry show celery")) is None
    assert find_celery(split_command("echo run celery -A app worker")) is None

"""A worker script that builds celery's arguments in a bash array (`CELERY_ARGS=( ... )`, more
words added with `+=`, then `celery "${CELERY_ARGS[@]}"`), run by a Compose service that names
the script. Cut from an on-call app's engine/celery_with_exporter.sh and its Compose file."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write
from tenure.doctor.celery.commands import expand_arrays, expand_evaluated
from tenure.doctor.celery.launches import find_celery

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
SCRIPT = """#!/bin/bash
CELERY_ARGS=(
  "--quiet"  # removes the banner
  "-A" "engine"
  "worker"
  "--concurrency=$CELERY_WORKER_CONCURRENCY"
  "-Q" "$CELERY_WORKER_QUEUE"
)
if [[ $CELERY_WORKER_BEAT_ENABLED = True ]]; then
  CELERY_ARGS+=("--beat")
fi
CELERY_ARGS+=({limit})

celery "${{CELERY_ARGS[@]}}"
"""
COMPOSE = """services:
  celery:
    image: oncall/engine
    restart: always
    command: sh -c "./celery_with_exporter.sh"
"""


def test_the_array_is_written_where_it_is_used_on_the_same_line() -> None:
    text = expand_arrays(SCRIPT.format(limit='"-l" "info"'))
    lines = text.splitlines()
    assert len(lines) == SCRIPT.count("\n")
    argv = lines[-1].replace('"', "").split()
    found = find_celery(argv)
    assert found is not None and found[1] == "engine"
    assert found[2]["queues"] == "$CELERY_WORKER_QUEUE" and found[2]["loglevel"] == "info"


@pytest.mark.parametrize(
    ("limit", "found"),
    [('"-l" "info"', ["celery-task-unbounded docker-compose.yml:2"]),
     ('"--time-limit=5"', [])],
)  # fmt: skip
def test_array_worker_run_by_a_compose_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    write(tmp_path, {"settings.py": SETTINGS, "docker-compose.yml": COMPOSE,
                     "engine/celery_with_exporter.sh": SCRIPT.format(limit=limit)})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    assert [" ".join(f.split()[:2]) for f in located(report)] == found


# Cut from a scanner's celery-entrypoint.sh: worker lines gathered in a string, then eval'd.
EVALUATED = """#!/bin/bash
commands=""
if [ "$DEBUG" == "1" ]; then
    commands+="watchmedo auto-restart -- celery -A scans.tasks worker -Q main{limit} &"$'\\n'
else
    commands+="celery -A scans.tasks worker --loglevel=$loglevel -Q main{limit} &"$'\\n'
fi
commands="${{commands%&}}"
eval "$commands"
"""
EVAL_COMPOSE = """services:
  celery:
    build:
      context: ./web
    entrypoint: /usr/src/app/celery-entrypoint.sh
"""


@pytest.mark.parametrize(
    ("limit", "found"),
    [("", ["celery-task-unbounded docker-compose.yml:2"]), (" --time-limit=5", [])],
)
def test_worker_lines_gathered_in_a_string_then_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    write(tmp_path, {"settings.py": SETTINGS, "docker-compose.yml": EVAL_COMPOSE,
                     "web/Dockerfile": "FROM python:3.12\nCOPY . /usr/src/app\n",
                     "web/celery-entrypoint.sh": EVALUATED.format(limit=limit)})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    assert [" ".join(f.split()[:2]) for f in located(report)] == found


def test_a_string_never_evaluated_is_not_a_command() -> None:
    text = 'msg="celery -A app worker"\necho "$msg"\n'
    assert expand_evaluated(text) == text

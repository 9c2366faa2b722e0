"""A worker script that builds its command in a variable (`ARGUMENTS="-A app worker
--time-limit=10000 -Q ${queues}"`, then `celery $ARGUMENTS`), named for the queue it serves
(`celery_local.sh`: the "local" queue, not a local development setup), run as the entrypoint
of a service in a Compose override file. Cut from intelowlproject/IntelOwl
(docker/entrypoints/celery_local.sh, docker/multi-queue.override.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
SCRIPT = """#!/bin/bash
if [ "$AWS_SQS" = "True" ]
then
  queues="local.fifo,config.fifo"
else
  queues="local,broadcast,config"
fi

ARGUMENTS="-A intel_owl.celery worker -n worker_local --time-limit=10000 -Ofair -Q ${queues}"
if [[ $DEBUG == "True" ]] && [[ $DJANGO_TEST_SERVER == "True" ]];
then
    python3 manage.py celery_reload -c "$ARGUMENTS"
else
  # shellcheck disable=SC2086
  /usr/local/bin/celery $ARGUMENTS
fi
"""
OVERRIDE = """services:
  celery_worker_local:
    image: intelowlproject/intelowl:${{REACT_APP_INTELOWL_VERSION}}
    restart: unless-stopped
    stop_grace_period: {grace}
    entrypoint:
      - ./docker/entrypoints/celery_local.sh
"""


@pytest.mark.parametrize(
    ("override", "expected"),
    [(OVERRIDE.format(grace="3m"), ["docker/multi-queue.override.yml:5"]),
     (OVERRIDE.format(grace="3h"), []),  # waits past the 10000 s limit: the quiet twin
     ("services:\n  web:\n    image: nginx\n", [])],  # no service runs the script: not deployed
)  # fmt: skip
def test_a_command_built_in_a_variable_is_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "docker/entrypoints/celery_local.sh": SCRIPT,
             "docker/multi-queue.override.yml": override}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    found = located(report, "celery-grace-below-time-limit")
    assert [f.split(" ")[1] for f in found] == expected
    if found:
        assert "up to 10000 s" in found[0]


# Cut from mayan-edms/Mayan-EDMS docker/rootfs/usr/local/bin/run_worker.sh: the script defaults
# its own environment (`export X=${X:-0}`) and uses it in a wrapper's option.
MAYAN = (
    "#!/bin/sh\nexport MAYAN_WORKER_NICE_LEVEL=${MAYAN_WORKER_NICE_LEVEL:-0}\n"
    'su mayan --command "nice -n ${MAYAN_WORKER_NICE_LEVEL} '
    '${MAYAN_PYTHON_BIN_DIR}celery -A mayan worker -Ofair"\n'
)
MAYAN_COMPOSE = """services:
  worker_a:
    build: .
    command: run_worker.sh
{grace}"""


@pytest.mark.parametrize(
    ("grace", "expected"), [("", ["docker-compose.yml:2"]), ("    stop_grace_period: 1m\n", [])]
)
def test_a_self_defaulted_variable_stays_a_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS + "CELERY_TASK_TIME_LIMIT = 30\n",
             "docker/rootfs/usr/local/bin/run_worker.sh": MAYAN,
             "Dockerfile": "FROM python:3.12\nCOPY docker/rootfs /\n",
             "docker-compose.yml": MAYAN_COMPOSE.format(grace=grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    found = located(report, "celery-grace-below-time-limit")
    assert [f.split(" ")[1] for f in found] == expected

"""Where Celery workers start and the grace around them, on layouts cut from real projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose
from tenure.doctor.celery.launches import find_celery

SETTINGS = "CELERY_BROKER_URL = 'redis://redis_broker:6379/0'\n"


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    for name, text in {"settings.py": SETTINGS, **files}.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings)


def test_find_celery_reads_long_short_and_glued_options() -> None:
    found = find_celery(["celery", "-A", "wger", "worker", "-c4", "-Qmail,default",
                         "--time-limit=300", "-B", "-l", "info"])  # fmt: skip
    options = {"app": "wger", "concurrency": "4", "queues": "mail,default",
               "time-limit": "300", "loglevel": "info"}  # fmt: skip
    assert found == ("worker", "wger", options)
    assert find_celery(["celery", "-A", "proj", "beat"]) is None
    assert find_celery(["python", "-m", "celery", "-A", "p", "worker"]) is not None
    # Mayan's run_worker.sh: the whole command is one quoted argument of su --command.
    mayan = ["su", "mayan", "--command", "nice -n 0 /opt/venv/bin/celery -A mayan worker -Ofair"]
    assert find_celery(mayan) == ("worker", "mayan", {"app": "mayan", "optimization": "fair"})


BOOKWYRM_COMPOSE = """services:
  web:
    build: .
    command: gunicorn bookwyrm.wsgi:application --bind 0.0.0.0:8000
  celery_worker:
    env_file: .env
    build: .
    command: celery -A celerywyrm worker --pool=threads --concurrency=20 -l info -Q high_priority
  celery_beat:
    build: .
    command: celery -A celerywyrm beat -l INFO
"""
BOOKWYRM_UNIT = """[Unit]
Description=BookWyrm worker

[Service]
User=bookwyrm
ExecStart=/opt/bookwyrm/venv/bin/celery -A celerywyrm worker -l info -Q high_priority
"""


def test_unbounded_tasks_under_compose_and_systemd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, {
        "docker-compose.yml": BOOKWYRM_COMPOSE,
        "docker-compose.dev.yml": BOOKWYRM_COMPOSE,  # the development overlay: not a deploy
        "contrib/systemd/bookwyrm-worker.service": BOOKWYRM_UNIT,
    }, monkeypatch)  # fmt: skip
    assert found == [
        "celery-task-unbounded contrib/systemd/bookwyrm-worker.service:4",
        "celery-task-unbounded docker-compose.yml:5",
    ]


def test_a_time_limit_bounds_tasks_and_is_compared_with_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = SETTINGS + "CELERY_TASK_SOFT_TIME_LIMIT = 5 * 60\nCELERY_TASK_TIME_LIMIT = 6 * 60\n"
    found = run(tmp_path, {"settings.py": limited, "docker-compose.yml": BOOKWYRM_COMPOSE},
                monkeypatch)  # fmt: skip
    assert found == ["celery-grace-below-time-limit docker-compose.yml:5"]
    graced = BOOKWYRM_COMPOSE.replace("    env_file: .env\n", "    stop_grace_period: 7m\n")
    found = run(tmp_path, {"settings.py": limited, "docker-compose.yml": graced}, monkeypatch)
    assert found == []


def test_development_compose_is_not_a_deploy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from Misago's docker-compose.yaml: runserver next to the worker."""
    compose = """services:
  misago:
    command: python manage.py runserver 0.0.0.0:8000
  celery-worker:
    command: celery -A devproject worker --loglevel=info
"""
    assert run(tmp_path, {"docker-compose.yaml": compose}, monkeypatch) == []


def test_entrypoint_script_gets_the_grace_of_the_service_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from taiga-back docker/async_entrypoint.sh (a continued exec line) and a Compose
    service that runs it."""
    script = (
        "#!/usr/bin/env bash\nset -euo pipefail\n\n"
        "exec gosu taiga celery -A taiga.celery worker -B \\\n"
        '    --concurrency 4 \\\n    -l INFO \\\n    "$@"\n'
    )
    compose = """services:
  taiga-async:
    image: taigaio/taiga-back:latest
    entrypoint: ["/taiga-back/docker/async_entrypoint.sh"]
    stop_grace_period: 30s
"""
    alone = run(tmp_path, {"docker/async_entrypoint.sh": script}, monkeypatch)
    assert alone == []  # no service runs it: its grace is unknown, so nothing is claimed
    found = run(tmp_path, {"docker/async_entrypoint.sh": script,
                           "deploy/docker-compose.yml": compose}, monkeypatch)  # fmt: skip
    assert found == ["celery-task-unbounded deploy/docker-compose.yml:5"]


def test_echo_lines_help_texts_and_other_subcommands_are_not_workers() -> None:
    """Cut from baserow backend/docker/docker-entrypoint.sh and open-event kubernetes/run.sh."""
    assert find_celery(["echo", "[LOG] Starting celery worker"]) is None
    assert find_celery(["celery-worker", ":", "Start the celery worker queue"]) is None
    assert find_celery(["exec", "celery", "-A", "baserow", "inspect", "ping", "-d", "w@h"]) is None
    assert find_celery(["exec", "celery", "-A", "baserow", "worker", "-l", "INFO"]) is not None
    mayan = ["su", "mayan", "--command",
             "nice -n ${NICE} ${MAYAN_PYTHON_BIN_DIR}celery -A mayan worker -Ofair"]  # fmt: skip
    assert find_celery(mayan) is not None


def test_kubernetes_container_running_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from open-event-server: the Deployment's celery container runs kubernetes/run.sh."""
    script = (
        '#!/bin/bash\nif [ "$DEPLOYMENT" == "celery" ]\nthen\n'
        '    echo "[LOG] Starting celery worker"\n'
        "    celery -A app.instance.celery worker -B --loglevel=warning\nfi\n"
    )
    deployment = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: api-server
spec:
  template:
    spec:
      containers:
      - name: celery
        image: eventyay/nextgen-api-server:latest
        command: ["/bin/sh","-c"]
        args: ["./kubernetes/run.sh"]
"""
    found = run(tmp_path, {"kubernetes/run.sh": script,
                           "kubernetes/yamls/deployment.yml": deployment}, monkeypatch)  # fmt: skip
    assert found == ["celery-task-unbounded kubernetes/yamls/deployment.yml:9"]


def test_entrypoint_subcommand_and_script_stem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Baserow's Compose runs `command: celery-worker`, a case of the image's entrypoint; Mayan's
    runs `command: [run_worker, worker_a]`, the run_worker.sh script under /usr/local/bin."""
    entrypoint = (
        "#!/bin/bash\nstart_celery_worker(){\n"
        '  exec celery -A baserow worker -l INFO "$@"\n}\n'
        'case "$1" in\n    celery-worker)\n      start_celery_worker -Q celery\n    ;;\nesac\n'
    )
    compose = """services:
  celery:
    image: baserow/backend:1.35.3
    command: celery-worker
  worker_a:
    image: mayanedms/mayanedms:s4.3
    command:
      - run_worker
      - worker_a
"""
    worker = 'su mayan --command "${BIN}celery -A mayan worker -Ofair ${@}"\n'
    found = run(tmp_path, {"backend/docker/docker-entrypoint.sh": entrypoint,
                           "docker/rootfs/usr/local/bin/run_worker.sh": worker,
                           "docker-compose.yml": compose}, monkeypatch)  # fmt: skip
    assert found == [
        "celery-task-unbounded docker-compose.yml:2",
        "celery-task-unbounded docker-compose.yml:5",
    ]


def test_celery_multi_under_supervisord_with_limits_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut from MediaCMS: supervisord programs run `celery multi start`, one with
    --soft-time-limit; the encode task's soft limit is settings.CELERY_SOFT_TIME_LIMIT."""
    short = (
        "[program:celery_short]\nstartsecs=0\n"
        "command=/home/m/bin/celery multi start short1 short2 --pidfile=/var/run/m/%%n.pid "
        "--soft-time-limit=300 -c10 -Q short_tasks\n"
    )
    long = (
        "[program:celery_long]\n"
        "command=/home/m/bin/celery multi start long1 -Ofair --prefetch-multiplier=1 -Q long\n"
    )
    tasks = (
        "from celery import shared_task\nfrom django.conf import settings\n\n"
        "@shared_task(bind=True, queue='long', soft_time_limit=settings.CELERY_SOFT_TIME_LIMIT)\n"
        "def encode_media(self, media_id):\n    pass\n"
    )
    found = run(tmp_path, {
        "settings.py": SETTINGS + "CELERY_SOFT_TIME_LIMIT = 2 * 60 * 60\n",
        "files/tasks.py": tasks,
        "deploy/docker/supervisord/supervisord-celery_short.conf": short,
        "deploy/docker/supervisord/supervisord-celery_long.conf": long,
    }, monkeypatch)  # fmt: skip
    assert found == [
        "celery-grace-below-time-limit deploy/docker/supervisord/supervisord-celery_long.conf:1",
        "celery-grace-below-time-limit deploy/docker/supervisord/supervisord-celery_short.conf:1",
    ]
    assert find_celery(["celery", "multi", "start", "w1", "w2", "-Q", "q"]) == (
        "worker",
        None,
        {"queues": "q", "multi": "true"},
    )


def test_memory_per_child_against_the_container_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 children x 400 MB (worker_max_memory_per_child is in KB) under a 2 GB Compose limit;
    the same with concurrency 4 fits."""
    settings = SETTINGS + (
        "CELERY_TASK_TIME_LIMIT = 5\nCELERY_WORKER_MAX_MEMORY_PER_CHILD = 400 * 1024\n"
    )
    compose = """services:
  worker:
    image: app:1
    command: celery -A proj worker --concurrency 8 -l info
    deploy:
      resources:
        limits:
          memory: 2g
"""
    found = run(tmp_path, {"settings.py": settings, "docker-compose.yml": compose}, monkeypatch)
    assert found == ["celery-memory-per-child-over-limit docker-compose.yml:8"]
    fits = compose.replace("--concurrency 8", "-c 4")
    assert run(tmp_path, {"settings.py": settings, "docker-compose.yml": fits}, monkeypatch) == []

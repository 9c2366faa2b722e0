"""Deployment units the readers used to pass over, each tied to the Celery worker it runs:
a Kamal role's `cmd:` (cut from commcare-connect's deploy/config/deploy.production.yml, whose
`celery` role runs `/start_celery`, a script the Dockerfile copies with `COPY ./docker/* /`),
a heroku.yml `run:` process (cut from open-chat-studio's heroku.yml), an Argo `Rollout`
(Sefaria's helm chart, rollout/task.yaml, shortened), and REMAP_SIGTERM=SIGQUIT on a Procfile
line (DocumentCloud's Procfile), which makes Heroku's SIGTERM Celery's cold shutdown. Each has
a quiet twin: the same unit with tasks bounded below its grace and no remapped signal."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import run_in, write

UNBOUNDED = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
BOUNDED = UNBOUNDED + "CELERY_TASK_TIME_LIMIT = 20\n"
TASKS = "from celery import shared_task\n\n\n@shared_task\ndef export_rows():\n    pass\n"

KAMAL_BASE = """service: connect
image: connect
builder:
  dockerfile: '../Dockerfile'
  context: '../'
"""
KAMAL_PRODUCTION = """servers:
  web:
    hosts:
      - 10.0.0.1
  celery:
    hosts:
      - 10.0.0.2
    cmd: /start_celery
    labels:
      traefik.enable: false
"""
DOCKERFILE = """FROM python:3.12-slim
COPY . /app
COPY ./docker/* /
RUN chmod +x /start*
WORKDIR /app
ENTRYPOINT ["/entrypoint"]
"""
START = """#!/bin/bash
set -o errexit
{prefix}celery -A config.celery_app worker -l INFO --concurrency 2
"""
ENTRY = '#!/bin/bash\nset -o errexit\nexec "$@"\n'


def found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> list[str]:
    files = {"config/tasks.py": TASKS, **files}
    write(tmp_path, files)
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="config/settings.py")
    rules = [f for f in report.findings
             if f.rule.startswith("celery-") or f.rule == "stop-signal-not-graceful"]  # fmt: skip
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in rules)


def kamal(settings: str, prefix: str = "") -> dict[str, str]:
    return {"config/settings.py": settings, "deploy/config/deploy.yml": KAMAL_BASE,
            "deploy/config/deploy.production.yml": KAMAL_PRODUCTION, "Dockerfile": DOCKERFILE,
            "docker/start_celery": START.format(prefix=prefix),
            "docker/entrypoint": ENTRY}  # fmt: skip


def test_a_kamal_role_runs_the_worker_script_its_image_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = kamal(UNBOUNDED, "REMAP_SIGTERM=SIGQUIT ")
    assert found(tmp_path, monkeypatch, files) == [
        "celery-task-unbounded deploy/config/deploy.production.yml:5",
        "stop-signal-not-graceful docker/start_celery:3",
    ]


def test_quiet_twin_a_kamal_role_with_bounded_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert found(tmp_path, monkeypatch, kamal(BOUNDED)) == []


def test_a_kamal_stop_timeout_is_the_roles_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = kamal(UNBOUNDED + "CELERY_TASK_TIME_LIMIT = 60\n")
    assert found(tmp_path, monkeypatch, files) == [
        "celery-grace-below-time-limit deploy/config/deploy.production.yml:5"
    ]
    files["deploy/config/deploy.yml"] = KAMAL_BASE + "stop_timeout: 90\n"
    assert found(tmp_path, monkeypatch, files) == []


HEROKU = """build:
  docker:
    django: Dockerfile
run:
  web:
    command:
      - gunicorn --bind 0.0.0.0:$PORT config.wsgi:application
    image: django
  worker:
    command:
      - celery -A config worker -l INFO --pool threads --concurrency 20
    image: django
  beat:
    command:
      - celery -A config beat -l INFO
    image: django
"""


def test_a_heroku_yml_process_is_a_worker_with_herokus_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"config/settings.py": UNBOUNDED, "heroku.yml": HEROKU}
    assert found(tmp_path, monkeypatch, files) == ["celery-task-unbounded heroku.yml:9"]


def test_quiet_twin_a_heroku_yml_worker_bounded_below_30_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"config/settings.py": BOUNDED, "heroku.yml": HEROKU}
    assert found(tmp_path, monkeypatch, files) == []


ROLLOUT = """apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: tasks
spec:
  replicas: 2
  strategy:
    canary:
      steps:
        - setWeight: 50
  template:
    spec:
{grace}      containers:
        - name: tasks
          image: "gcr.io/shop/tasks:latest"
          command: ["celery", "-A", "config", "worker", "-l", "INFO"]
"""


def test_an_argo_rollout_is_a_deployment_shaped_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"config/settings.py": UNBOUNDED, "k8s/tasks.yaml": ROLLOUT.format(grace="")}
    assert found(tmp_path, monkeypatch, files) == ["celery-task-unbounded k8s/tasks.yaml:14"]


def test_quiet_twin_a_rollout_whose_grace_covers_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollout = ROLLOUT.format(grace="      terminationGracePeriodSeconds: 60\n")
    files = {"config/settings.py": BOUNDED, "k8s/tasks.yaml": rollout}
    assert found(tmp_path, monkeypatch, files) == []


PROCFILE = """web: gunicorn config.wsgi:application
worker: {prefix}celery --app=config.celery_app worker --loglevel=info
"""


def test_remap_sigterm_on_a_procfile_line_is_a_cold_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"config/settings.py": BOUNDED,
             "Procfile": PROCFILE.format(prefix="REMAP_SIGTERM=SIGQUIT ")}  # fmt: skip
    assert found(tmp_path, monkeypatch, files) == ["stop-signal-not-graceful Procfile:2"]


@pytest.mark.parametrize("prefix", ["", "REMAP_SIGTERM=SIGTERM ", "# REMAP_SIGTERM=SIGQUIT "])
def test_quiet_twin_sigterm_left_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str
) -> None:
    procfile = PROCFILE.format(prefix=prefix)
    if prefix.startswith("#"):
        procfile = PROCFILE.format(prefix="") + "# worker: REMAP_SIGTERM=SIGQUIT celery worker\n"
    files = {"config/settings.py": BOUNDED, "Procfile": procfile}
    assert found(tmp_path, monkeypatch, files) == []


def test_remap_sigterm_in_a_compose_services_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = """services:
  worker:
    build: .
    environment:
      REMAP_SIGTERM: "SIGQUIT"
"""
    dockerfile = 'FROM python:3.12\nCOPY . /app\nCMD ["celery", "-A", "config", "worker"]\n'
    files = {"config/settings.py": "CELERY_TASK_TIME_LIMIT = 5\n", "docker-compose.yml": compose,
             "Dockerfile": dockerfile}  # fmt: skip
    assert found(tmp_path, monkeypatch, files) == ["stop-signal-not-graceful docker-compose.yml:2"]


# cookiecutter-django's production stack (DocumentCloud's production.yml and
# compose/production/django/Dockerfile): every service runs the same image, which copies each
# start script under a name of its own; `django` runs /start (gunicorn), `celeryworker`
# /start-celeryworker, the file compose/production/django/celery/worker/start.
COOKIECUTTER_COMPOSE = """services:
  django: &django
    build:
      context: .
      dockerfile: ./compose/production/django/Dockerfile
    image: shop_production_django
    command: /start

  celeryworker:
    <<: *django
    image: shop_production_celeryworker
    command: /start-celeryworker
{grace}"""
COOKIECUTTER_DOCKERFILE = """FROM python:3.12-slim
COPY ./compose/production/django/start /start
RUN chmod +x /start
COPY ./compose/production/django/celery/worker/start /start-celeryworker
RUN chmod +x /start-celeryworker
COPY . /app
WORKDIR /app
"""
WEB_START = "#!/bin/bash\nset -o errexit\nexec gunicorn config.wsgi\n"
WORKER_START = "#!/bin/bash\nset -o errexit\nexec celery -A config.celery_app worker -l INFO\n"


def cookiecutter(settings: str, grace: str = "") -> dict[str, str]:
    return {"config/settings.py": settings,
            "production.yml": COOKIECUTTER_COMPOSE.format(grace=grace),
            "compose/production/django/Dockerfile": COOKIECUTTER_DOCKERFILE,
            "compose/production/django/start": WEB_START,
            "compose/production/django/celery/worker/start": WORKER_START}  # fmt: skip


def test_a_script_copied_under_another_name_is_run_by_the_service_naming_that_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = cookiecutter(UNBOUNDED + "CELERY_TASK_TIME_LIMIT = 60\n")
    assert found(tmp_path, monkeypatch, files) == ["celery-grace-below-time-limit production.yml:9"]


def test_quiet_twin_the_worker_service_given_a_grace_above_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = cookiecutter(
        UNBOUNDED + "CELERY_TASK_TIME_LIMIT = 60\n", "    stop_grace_period: 90s\n"
    )
    assert found(tmp_path, monkeypatch, files) == []

"""Celery settings read through the environment helpers real projects use: the default is the
value, and the report says it came from a default; an unknown time limit is said, and does not
switch off what can still be compared. Each layout is cut from a real settings file, with a
quiet twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose
from tenure.doctor.model import Finding

LATE = "celery-visibility-below-time-limit"


def run(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        target: str = "settings.py") -> tuple[list[Finding], list[str]]:  # fmt: skip
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery=target)
    return report.findings, [s.reason for s in report.skipped]


# Cut from a Django settings file on python-decouple (a task config block of an audio service).
DECOUPLE = """from decouple import config

CELERY_BROKER_URL = config("CELERY_BROKER_URL", default="redis://redis:6379/0")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
TASK_TIME_LIMIT = config("TASK_TIME_LIMIT", default="7200", cast=int)  # 2 hours
CELERY_TASK_TIME_LIMIT = TASK_TIME_LIMIT
"""


def test_decouple_cast_default_is_the_value_and_said_to_be_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    findings, _ = run(tmp_path, {"settings.py": DECOUPLE}, monkeypatch)
    (late,) = [f for f in findings if f.rule == LATE]
    assert "may run 7200 s" in late.message
    limit = late.clocks[0]
    assert limit.amount == 7200
    assert "the default of TASK_TIME_LIMIT" in str(limit.source)


def test_decouple_quiet_when_the_env_file_sets_a_shorter_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"settings.py": DECOUPLE, ".env": "TASK_TIME_LIMIT=1800\n"}
    findings, _ = run(tmp_path, files, monkeypatch)
    assert [f.rule for f in findings] == []


# Cut from a FastAPI service's pydantic settings (app/core/config.py) and its Celery app.
PYDANTIC = """from pydantic import Field
from pydantic_settings import BaseSettings
from celery import Celery


class Settings(BaseSettings):
    CELERY_BROKER_URL: str = Field(default="redis://localhost:6379/0")
    CELERY_TASK_TIME_LIMIT: int = Field(default=7200)
    CELERY_TASK_SOFT_TIME_LIMIT: int = Field(default=6900)
    celery_worker_concurrency: int = int(os.getenv("CELERY_WORKER_CONCURRENCY", "4"))
    CELERY_TASK_ACKS_LATE: bool = Field(default=True)


settings = Settings()
celery_app = Celery("worker", broker=settings.CELERY_BROKER_URL)
celery_app.conf.update(
    task_time_limit=settings.CELERY_TASK_TIME_LIMIT,
    task_soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    task_acks_late=settings.CELERY_TASK_ACKS_LATE,
    worker_concurrency=settings.celery_worker_concurrency,
)
"""


def test_pydantic_settings_defaults_are_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    findings, _ = run(tmp_path, {"celery_app.py": PYDANTIC}, monkeypatch, "celery_app.py")
    (late,) = [f for f in findings if f.rule == LATE]
    assert "may run 7200 s" in late.message
    assert "the default of CELERY_TASK_TIME_LIMIT" in str(late.clocks[0].source)


def test_pydantic_settings_quiet_when_the_env_file_sets_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"celery_app.py": PYDANTIC, ".env": "celery_task_time_limit=600\n"}
    findings, _ = run(tmp_path, files, monkeypatch, "celery_app.py")
    assert [f.rule for f in findings] == []


# Cut from a dynaconf project's celeryconfig: settings.get(KEY, default).
DYNACONF = """from dynaconf import settings

broker_url = settings.get("CELERY_BROKER_URL", "redis://redis:6379/1")
task_acks_late = True
worker_prefetch_multiplier = 1
task_time_limit = settings.get("CELERY_TASK_TIME_LIMIT", {limit})
"""


def test_dynaconf_get_default_is_the_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings, _ = run(tmp_path, {"settings.py": DYNACONF.format(limit=5400)}, monkeypatch)
    assert [f.rule for f in findings] == [LATE]
    findings, _ = run(tmp_path, {"settings.py": DYNACONF.format(limit=1800)}, monkeypatch)
    assert findings == []


# Cut from a Django project whose time limit is only in the deployment's environment
# (os.environ["..."], no default), with one task that sets its own limit; run by Compose.
UNKNOWN_LIMIT = """import os
CELERY_BROKER_URL = "redis://redis:6379/0"
CELERY_TASK_TIME_LIMIT = int(os.environ["CELERY_TASK_TIME_LIMIT"])
"""
TASKS = """from celery import shared_task


@shared_task(time_limit={limit})
def rebuild_search_index():
    pass


@shared_task
def send_mail():
    pass
"""
COMPOSE = """services:
  worker:
    build: .
    command: celery -A proj worker -l info
    stop_grace_period: 30s
"""


def test_unknown_time_limit_still_compares_tasks_with_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"settings.py": UNKNOWN_LIMIT, "tasks.py": TASKS.format(limit=900),
             "docker-compose.yml": COMPOSE}  # fmt: skip
    findings, skipped = run(tmp_path, files, monkeypatch)
    assert [f.rule for f in findings] == ["celery-grace-below-time-limit"]
    assert "up to 900 s" in findings[0].message and "30 s" in findings[0].message
    # send_mail's limit is unknown: said, never reported as "no time limit".
    assert any("unknown" in reason and "grace" in reason for reason in skipped)


def test_unknown_time_limit_quiet_twin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"settings.py": UNKNOWN_LIMIT, "tasks.py": TASKS.format(limit=20),
             "docker-compose.yml": COMPOSE}  # fmt: skip
    findings, skipped = run(tmp_path, files, monkeypatch)
    assert findings == []
    assert any("unknown" in reason for reason in skipped)


# Cut from Flask's documented Celery layout (app factory with a CELERY mapping in the config).
FLASK = """from celery import Celery, Task
from flask import Flask


def create_app() -> Flask:
    app = Flask(__name__)
    app.config.from_mapping(
        CELERY=dict(
            broker_url="redis://localhost:6379/0",
            task_acks_late=True,
            task_time_limit={limit},
            worker_prefetch_multiplier=1,
        ),
    )
    return app
"""


def test_flask_celery_mapping_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings, _ = run(tmp_path, {"settings.py": FLASK.format(limit=7200)}, monkeypatch)
    assert [f.rule for f in findings] == [LATE]
    findings, _ = run(tmp_path, {"settings.py": FLASK.format(limit=600)}, monkeypatch)
    assert findings == []


# Cut from a Django project's celery settings and tasks: a class-based task with its own
# limits, a decorated task on a base class, and task_annotations for one task by name.
DEPTH_SETTINGS = """CELERY_BROKER_URL = "redis://redis:6379/0"
CELERY_TASK_TIME_LIMIT = 20
CELERY_TASK_ANNOTATIONS = {{"exports.tasks.render_pdf": {{"time_limit": {annotated}}}}}
"""
DEPTH_TASKS = """from celery import Task, shared_task


class LongTask(Task):
    abstract = True
    time_limit = {base}


class ImportFeed(Task):
    name = "feeds.import"
    time_limit = {own}


@shared_task(base=LongTask)
def rebuild_index():
    pass


@shared_task
def render_pdf():
    pass
"""
DEPTH_COMPOSE = """services:
  worker:
    image: shop/app
    command: celery -A shop worker -l info
    stop_grace_period: 60s
"""


def depth(base: int, own: int, annotated: int) -> dict[str, str]:
    return {"settings.py": DEPTH_SETTINGS.format(annotated=annotated),
            "exports/tasks.py": DEPTH_TASKS.format(base=base, own=own),
            "docker-compose.yml": DEPTH_COMPOSE}  # fmt: skip


@pytest.mark.parametrize(
    ("base", "own", "annotated", "longest"),
    [(300, 30, 30, 300), (30, 900, 30, 900), (30, 30, 1200, 1200)],
)
def test_class_tasks_base_and_annotations_set_the_longest_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: int, own: int, annotated: int,
    longest: int,
) -> None:  # fmt: skip
    findings, _ = run(tmp_path, depth(base, own, annotated), monkeypatch)
    assert [f.rule for f in findings] == ["celery-grace-below-time-limit"]
    assert f"up to {longest} s" in findings[0].message


def test_class_tasks_base_and_annotations_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    findings, _ = run(tmp_path, depth(45, 50, 55), monkeypatch)
    assert findings == []


# Cut from a campaign-finance API: the download task's limit read through a Cloud Foundry
# environment object (cfenv's `env.get_credential`) with a default, run on a CF manifest (10 s).
CF_TASKS = """from celery import shared_task
from webservices.env import env

DOWNLOAD_HARD_LIMIT = int(env.get_credential("DOWNLOAD_HARD_LIMIT", {limit}))


@shared_task(time_limit=DOWNLOAD_HARD_LIMIT)
def export_query(query):
    pass
"""
CF_MANIFEST = """---
applications:
  - name: celery-worker
    instances: 2
    command: celery --app webservices.tasks worker --concurrency 3
"""


@pytest.mark.parametrize(("limit", "rules"), [(300, ["celery-grace-below-time-limit"]), (5, [])])
def test_an_environment_objects_method_with_a_default_is_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, rules: list[str]
) -> None:
    files = {"settings.py": "broker_url = 'redis://redis:6379/0'\n",
             "webservices/tasks/download.py": CF_TASKS.format(limit=limit),
             "manifests/manifest_celery_worker_prod.yml": CF_MANIFEST}  # fmt: skip
    findings, _ = run(tmp_path, files, monkeypatch)
    assert [f.rule for f in findings] == rules


def test_a_feature_space_manifest_is_not_a_deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"settings.py": "broker_url = 'redis://redis:6379/0'\n",
             "webservices/tasks/download.py": CF_TASKS.format(limit=300),
             "manifests/manifest_celery_worker_feature.yml": CF_MANIFEST}  # fmt: skip
    findings, _ = run(tmp_path, files, monkeypatch)
    assert findings == []


# Cut from a security-findings manager's settings.dist.py: django-environ's scheme gives the
# default, the setting reads the key without one of its own.
SCHEME = """import environ

env = environ.FileAwareEnv(
    DD_CELERY_BROKER_URL=(str, "redis://valkey:6379/0"),
    DD_CELERY_TASK_TIME_LIMIT=(int, {limit}),  # default: 12 hours
)
CELERY_BROKER_URL = env("DD_CELERY_BROKER_URL")
if env("DD_CELERY_TASK_TIME_LIMIT") > 0:
    CELERY_TASK_TIME_LIMIT = env("DD_CELERY_TASK_TIME_LIMIT")
"""
SCHEME_COMPOSE = """services:
  celeryworker:
    image: "dojo/django:latest"
    command: celery --app=dojo worker --loglevel=INFO
"""


@pytest.mark.parametrize(("limit", "rules"), [(43200, ["celery-grace-below-time-limit"]), (5, [])])
def test_django_environ_scheme_default_is_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, rules: list[str]
) -> None:
    files = {"settings.py": SCHEME.format(limit=limit), "docker-compose.yml": SCHEME_COMPOSE}
    findings, _ = run(tmp_path, files, monkeypatch)
    assert [f.rule for f in findings if f.rule.startswith("celery-grace")] == rules

"""Cloud Foundry manifests run Celery workers: `applications:` with a `command:`, and CF's
fixed 10 s between SIGTERM and SIGKILL. Cut from a Flask + Celery project deployed with
`cf push` (manifests/manifest_celery_worker_<space>.yml beside the API's manifest, a task
limited from the environment, reload tasks with no limit). The quiet twins: a task limit below
10 s, and every task given a limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
MANIFEST = """---
applications:
  - name: celery-worker
    instances: 6
    memory: 1.5G
    no-route: true
    health-check-type: process
    command: celery --app webservices.tasks.make_celery worker --loglevel ${LOGLEVEL:=INFO} -c 3
    path: ../
    buildpacks:
      - python_buildpack
"""
API = """---
applications:
  - name: api
    instances: 2
    memory: 1G
    path: ../
"""
TASKS = """from celery import shared_task

from webservices import env

HARD_LIMIT = int(env.get_credential("DOWNLOAD_HARD_LIMIT"))  # no default: unknown


@shared_task(time_limit={limit})
def export_query(query):
    return query


@shared_task({reload})
def weekly_reload_all():
    return None


@shared_task(time_limit=HARD_LIMIT)
def from_env():
    return None
"""


def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, reload: str) -> list[str]:
    files = {"settings.py": SETTINGS,
             "webservices/tasks/download.py": TASKS.format(limit=limit, reload=reload),
             "manifests/manifest_celery_worker_prod.yml": MANIFEST,
             "manifests/manifest_api_prod.yml": API}  # fmt: skip
    found = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    return located(found, "celery-grace-below-time-limit") + located(found, "celery-task-unbounded")


def test_the_cf_grace_is_compared_with_the_task_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = report(tmp_path, monkeypatch, "300", "time_limit=5")
    assert len(found) == 1, found
    assert found[0].startswith(
        "celery-grace-below-time-limit manifests/manifest_celery_worker_prod.yml:3 "
    ), found
    assert "kills it 10 s after SIGTERM" in found[0]


def test_quiet_twin_limits_below_the_cf_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert report(tmp_path, monkeypatch, "8", "time_limit=5") == []


def test_a_task_without_a_limit_is_unbounded_beside_one_whose_limit_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = report(tmp_path, monkeypatch, "5", "")
    assert [f.split(" ")[:2] for f in found] == [
        ["celery-task-unbounded", "manifests/manifest_celery_worker_prod.yml:3"]
    ], found

"""A worker bound to named queues (`celery worker -Q ...`) is judged on the tasks that reach
them. Cut from a supervisord layout with one program per queue-bound worker: tasks named and
routed by class constants (`@shared_task(name=Tasks.FETCH)`, `app.send_task(Tasks.FETCH,
queue=Queues.HEAVY)`), a beat entry with `"options": {"queue": ...}`, and a Compose worker
whose queues only an installed package's tasks use."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "broker_url = 'redis://redis:6379/0'\n"
CONSTANTS = """class Queues:
    PRIMARY = "celery"
    HEAVY = "connector_hierarchy_fetching"
    LIGHT = "vespa_metadata_sync"


class Tasks:
    FETCH = "connector_hierarchy_fetching_task"
    SYNC = "vespa_metadata_sync_task"
"""
TASKS = """from celery import shared_task
from app.constants import Queues, Tasks

@shared_task(name=Tasks.FETCH, soft_time_limit=3600, time_limit=3900, bind=True)
def connector_hierarchy_fetching_task(self):
    pass

@shared_task(name=Tasks.SYNC, soft_time_limit=45, time_limit=60, bind=True)
def vespa_metadata_sync_task(self):
    pass

@shared_task(bind=True{primary})
def check_for_hierarchy_fetching(self):
    self.app.send_task(Tasks.FETCH, kwargs={{}}, queue=Queues.HEAVY)
"""
BEAT = """from app.constants import Queues, Tasks

beat_task_templates = [
    {"name": "sync", "task": Tasks.SYNC, "schedule": 20, "options": {"queue": Queues.LIGHT}},
]
"""
SUPERVISORD = """[program:celery_worker_primary]
command=celery -A app.primary worker
    -Q celery
stopasgroup=true

[program:celery_worker_light]
command=celery -A app.light worker
    -Q vespa_metadata_sync,connector_deletion
stopasgroup=true

[program:celery_worker_heavy]
command=celery -A app.heavy worker
    -Q connector_pruning,connector_hierarchy_fetching
stopasgroup=true
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, primary: str) -> list[str]:
    files = {"app/config.py": SETTINGS, "app/constants.py": CONSTANTS,
             "app/tasks.py": TASKS.format(primary=primary), "app/beat.py": BEAT,
             "supervisord.conf": SUPERVISORD}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="app/config.py")  # fmt: skip
    return sorted(" ".join(f.split(" ")[:2]) for f in located(report)
                  if "grace" in f or "unbounded" in f)  # fmt: skip


def test_each_queue_bound_worker_is_judged_on_the_tasks_routed_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 3900 s fetch is sent to the heavy queue only; the light worker's sync task (beat
    # sends it there) allows 60 s; the primary worker runs the unrouted check with no limit.
    assert _run(tmp_path, monkeypatch, "") == [
        "celery-grace-below-time-limit supervisord.conf:11",
        "celery-grace-below-time-limit supervisord.conf:6",
        "celery-task-unbounded supervisord.conf:1",
    ]


def test_quiet_twin_short_limits_everywhere_but_the_heavy_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The primary check gets a 5 s limit: only the heavy worker is past its grace, and the
    # 3900 s task is not charged to the primary or light workers.
    found = _run(tmp_path, monkeypatch, ", time_limit=5")
    assert "celery-grace-below-time-limit supervisord.conf:11" in found
    assert not [f for f in found if f.endswith(":1") or "unbounded" in f]


COMPOSE = """services:
  celery:
    image: dashboard
    command: celery -A app worker -l info
  celery_monitoring:
    image: dashboard
    command: celery -A app worker -l info -Q monitoring,network
"""
PLAIN = """from celery import shared_task

@shared_task
def send_mail():
    pass
"""


def test_a_worker_whose_queues_no_project_task_reaches_is_said_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"app/config.py": SETTINGS, "app/tasks.py": PLAIN, "docker-compose.yml": COMPOSE}
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="app/config.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if "unbounded" in f]
    assert found == ["celery-task-unbounded docker-compose.yml:2"]
    assert any("no task of the project is seen" in s.reason for s in report.skipped)


# Cut from a Pyramid app whose Celery app module sets the default queue in conf.update (not the
# settings file the doctor reads) and a Procfile worker reading that queue.
APP = """def includeme(config):
    config.registry["celery.app"].conf.update(
        task_default_queue={queue!r},
        task_serializer="json",
    )
"""
PROCFILE = "worker: celery -A app worker --concurrency=1 -Q default -l info\n"
ACKS_LATE = """from app.celery import task

@task(bind=True, acks_late=True)
def reindex(self):
    pass
"""


@pytest.mark.parametrize(
    ("queue", "expected"),
    [("default", ["celery-task-unbounded Procfile:1"]),
     ("other", [])],  # the quiet twin: unrouted tasks go to a queue the worker does not read
)  # fmt: skip
def test_the_default_queue_set_in_an_app_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queue: str, expected: list[str]
) -> None:
    files = {"app/config.py": SETTINGS, "app/tasks.py": APP.format(queue=queue),
             "app/search.py": ACKS_LATE, "Procfile": PROCFILE}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="app/config.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if "unbounded" in f]
    assert found == expected

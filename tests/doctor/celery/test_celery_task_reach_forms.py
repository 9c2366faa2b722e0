"""The code a Celery task runs, through the layouts real projects use beyond a plain import:
a package that re-exports (`from .base import *` in models/__init__.py, cut from a Django
monitoring app's shift calendar), a Django row whose base class's run() calls the subclass's
_run_task() (cut from a form server's import tasks), a session held on `self`, http.client and
urlopen, and a call whose timeout is not below the task's time limit. Each has a quiet twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "monitor.settings")
app = Celery("monitor")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
TASKS = """from monitor.celery import app
from monitor.importer import ImportTask
from monitor.feeds import FeedClient


@app.task(ignore_result=True)
def update_shifts():
    from .models import update_shifts as _update_shifts
    _update_shifts()


@app.task
def import_in_background(import_task_uid):
    import_task = ImportTask.objects.get(uid=import_task_uid)
    import_task.run()
    return import_task.uid


@app.task(time_limit=300)
def poll_feeds(url):
    return FeedClient(url).poll()
"""
MODELS_INIT = "from .base import *\nfrom .plugins import *\n"
MODELS_BASE = """from monitor.calendar import get_events


def update_shifts():
    for event in get_events():
        print(event)
"""
CALENDAR = """import requests
from django.conf import settings


def get_events():
    return get_calendar_data().splitlines()


def get_calendar_data():
    feed_url = settings.CALENDAR_ICAL_URL
    resp = requests.get(feed_url{timeout})
    return resp.text
"""
IMPORTER = """import requests
from django.db import models


class ImportExportTask(models.Model):
    class Meta:
        abstract = True

    def run(self):
        messages = []
        self._run_task(messages)


class ImportTask(ImportExportTask):
    def _run_task(self, messages):
        response = requests.get(self.data["single_xls_url"]{timeout})
        messages.append(response.status_code)
"""
FEEDS = """import http.client
from urllib.request import urlopen

import httpx
import requests


class BaseClient:
    def __init__(self, url):
        self.url = url
        self.session = requests.Session()
        self.fast = httpx.Client()


class FeedClient(BaseClient):
    def poll(self):
        self.fast.get(self.url)
        conn = http.client.HTTPConnection("feeds.example.com"{timeout})
        conn.request("GET", "/")
        urlopen(self.url{timeout}).read()
        return self.session.get(self.url{timeout}).json()
"""


SETTINGS = 'CELERY_BROKER_URL = "redis://redis:6379/0"\n'


def run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str, rule: str, settings: str = ""
) -> list[str]:
    write(tmp_path, {
        "monitor/__init__.py": "", "monitor/celery.py": CELERY, "monitor/tasks.py": TASKS,
        "monitor/models/__init__.py": MODELS_INIT, "monitor/models/base.py": MODELS_BASE,
        "monitor/models/plugins.py": "PLUGINS = []\n",
        "monitor/calendar.py": CALENDAR.format(timeout=timeout),
        "monitor/importer.py": IMPORTER.format(timeout=timeout),
        "monitor/feeds.py": FEEDS.format(timeout=timeout),
        "monitor/settings.py": SETTINGS + settings,
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="monitor/celery.py")
    return sorted(f"{f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == rule)  # fmt: skip


def test_calls_through_reexports_bases_and_held_sessions_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "", "client-timeout-missing")
    lines = [f.split(" ", 1)[0] for f in found]
    assert lines == [
        "monitor/calendar.py:11",  # tasks -> models/__init__ (*) -> base -> calendar
        "monitor/feeds.py:18",  # http.client.HTTPConnection with no timeout
        "monitor/feeds.py:20",  # urlopen
        "monitor/feeds.py:21",  # self.session, made in the base class's __init__
        "monitor/importer.py:16",  # ImportExportTask.run() -> ImportTask._run_task()
    ]
    importer = found[-1]
    assert "Celery task 'import_in_background'" in importer
    assert "ImportExportTask.run() -> ImportTask._run_task()" in importer
    assert "update_shifts() -> update_shifts() -> get_events() -> get_calendar_data()" in found[0]


def test_an_httpx_client_has_a_default_and_stays_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "", "client-timeout-missing")
    assert not any("feeds.py:17" in f for f in found)  # self.fast.get: httpx's 5 s


def test_the_same_calls_with_a_timeout_below_the_limit_are_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rule in ("client-timeout-missing", "client-timeout-not-below-job"):
        assert run(tmp_path, monkeypatch, ", timeout=10", rule) == []


def test_a_django_model_named_task_is_no_celery_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "", "client-timeout-missing")
    assert not any("Celery task 'ImportTask'" in f for f in found)


def test_a_timeout_not_below_the_tasks_time_limit_is_reported_on_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, ", timeout=600", "client-timeout-not-below-job")
    # poll_feeds has time_limit=300; the other two tasks have no limit: nothing to compare.
    assert [f.split(" ", 1)[0] for f in found] == [
        "monitor/feeds.py:18", "monitor/feeds.py:20", "monitor/feeds.py:21"]  # fmt: skip
    assert "Celery task 'poll_feeds' (time_limit 300 s) calls self.session.get()" in found[2]


def test_the_apps_task_time_limit_applies_to_tasks_without_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = "CELERY_TASK_SOFT_TIME_LIMIT = 120\n"
    found = run(tmp_path, monkeypatch, ", timeout=600", "client-timeout-not-below-job", limit)
    lines = [f.split(" ", 1)[0] for f in found]
    assert "monitor/calendar.py:11" in lines and "monitor/importer.py:16" in lines
    assert "(task_soft_time_limit 120 s)" in found[0]


def test_a_name_a_package_re_exports_is_followed_to_its_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {
        "monitor/etl/__init__.py": 'from .extract import fetch_all\n\n__all__ = ["fetch_all"]\n',
        "monitor/etl/extract.py": "import requests\n\n\ndef fetch_all(url):\n"
                                  "    return requests.get(url).json()\n",
    })  # fmt: skip
    tasks = TASKS + "\n\n@app.task\ndef nightly(url):\n    from monitor.etl import fetch_all\n"
    tasks += "    return fetch_all(url)\n"
    found = run(tmp_path, monkeypatch, ", timeout=10", "client-timeout-missing")
    assert found == []  # run() wrote TASKS; now the task that calls the re-exported name
    write(tmp_path, {"monitor/tasks.py": tasks})
    report = diagnose(None, ".", history=False, celery="monitor/celery.py")
    found = [f"{f.location.path}:{f.location.line} {f.message}" for f in report.findings
             if f.rule == "client-timeout-missing"]  # fmt: skip
    assert len(found) == 1 and found[0].startswith("monitor/etl/extract.py:5 Celery task 'nightly'")

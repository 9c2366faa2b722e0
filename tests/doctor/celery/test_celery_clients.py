"""Network calls in Celery tasks, in the task or in a project helper it imports. Cut from
clarkeustaquio/HackFest-2020-KMLNGMLKS-Corp (Django/api/tasks.py: `from .views import
request_call` and a @shared_task calling it; Django/api/views.py: request_call() does
`requests.get(url)` with no timeout) and zgzhong/Abandon
(Python/Celery/distribute_call/celery_test/tasks.py: `requests.head(url)` in the task). The
quiet twins pass timeout=."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor import diagnose

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
TASKS = """from celery import shared_task
from rest_framework.response import Response

from .views import request_call


@shared_task
def send_request():
    request_call()
    return True
"""
VIEWS = """import datetime

import requests

url = 'https://newsapi.org/v2/top-headlines?country=ph'


def request_call():
    list_numbers = list()
    request_news = requests.get(url{bound})
    response_data = request_news.json()
    return response_data
"""
DIRECT = """from __future__ import absolute_import
from celery_test.celery import app
import requests


@app.task(time_limit=60)
def visit_url(url):
    req = requests.head(url{bound})
    return req.status_code
"""


def found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str) -> list[str]:
    files = {"settings.py": SETTINGS, "Django/api/__init__.py": "",
             "Django/api/tasks.py": TASKS, "Django/api/views.py": VIEWS.replace("{bound}", bound),
             "celery_test/tasks.py": DIRECT.replace("{bound}", bound)}  # fmt: skip
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    return sorted(
        f"{f.rule} {f.location.path}:{f.location.line}"
        for f in report.findings
        if f.rule.startswith("client-")
    )


def test_calls_without_timeout_in_a_task_and_its_imported_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert found(tmp_path, monkeypatch, "") == [
        "client-timeout-missing Django/api/views.py:10",
        "client-timeout-missing celery_test/tasks.py:8",
    ]


def test_a_timeout_longer_than_the_tasks_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert found(tmp_path, monkeypatch, ", timeout=120") == [
        "client-timeout-not-below-job celery_test/tasks.py:8"
    ]


def test_quiet_twin_with_timeouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert found(tmp_path, monkeypatch, ", timeout=10") == []

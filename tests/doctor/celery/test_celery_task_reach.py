"""HTTP calls without a timeout in the code a Celery task runs: the task body calls an ETL
pipeline module (`pipelines.xpro_etl()`, a `compose(load, xpro.transform, xpro.extract)`),
whose extract function calls `requests.get` with no timeout. Cut from a Django + Celery course
catalog (tasks.py -> etl/pipelines.py -> etl/xpro.py). The finding sits on the call line; the
same code with timeout=, and the same call from a web view no task reaches, are quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """from celery import Celery

app = Celery("catalog")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
TASKS = """from catalog.celery import app
from catalog.etl import pipelines
from catalog.etl.client import Fetcher


@app.task
def get_xpro_data():
    pipelines.xpro_etl()


@app.task
def refresh_feeds(url):
    fetcher = Fetcher(url)
    return fetcher.fetch()
"""
PIPELINES = """from toolz import compose

from catalog.etl import loaders, xpro

xpro_etl = compose(loaders.load_programs, xpro.transform, xpro.extract)
"""
LOADERS = "def load_programs(programs):\n    return list(programs)\n"
XPRO = """import requests
from django.conf import settings


def transform(data):
    return [item["id"] for item in data]


def extract():
    if settings.XPRO_CATALOG_API_URL:
        return requests.get(settings.XPRO_CATALOG_API_URL{timeout}).json()
    return []
"""
CLIENT = """from .http import post_json


class Fetcher:
    def __init__(self, url):
        self.url = url

    def fetch(self):
        return self._send({{"url": self.url}})

    def _send(self, body):
        return post_json(self.url, body)
"""
HTTP = """import requests


def post_json(url, body):
    return requests.post(url, json=body{timeout})
"""
VIEWS = """import requests


def catalog_view(request):
    return requests.get("https://example.com/catalog")
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str) -> list[str]:
    write(tmp_path, {
        "catalog/__init__.py": "", "catalog/celery.py": CELERY, "catalog/tasks.py": TASKS,
        "catalog/views.py": VIEWS, "catalog/etl/__init__.py": "",
        "catalog/etl/pipelines.py": PIPELINES, "catalog/etl/loaders.py": LOADERS,
        "catalog/etl/xpro.py": XPRO.format(timeout=timeout),
        "catalog/etl/client.py": CLIENT.format(),
        "catalog/etl/http.py": HTTP.format(timeout=timeout),
        "catalog/settings.py": 'CELERY_BROKER_URL = "redis://redis:6379/0"\n',
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="catalog/celery.py")
    return sorted(f"{f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == "client-timeout-missing")  # fmt: skip


def test_calls_a_task_reaches_through_imports_are_reported_on_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, timeout="")
    assert len(found) == 2
    http, xpro = found
    assert http.startswith(
        "catalog/etl/http.py:5 Celery task 'refresh_feeds' calls requests.post()"
    )
    assert "Fetcher.fetch() -> Fetcher._send() -> post_json()" in http
    assert xpro.startswith(
        "catalog/etl/xpro.py:11 Celery task 'get_xpro_data' calls requests.get()"
    )
    assert "through get_xpro_data() -> extract() with no timeout" in xpro


def test_the_same_calls_with_a_timeout_are_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, timeout=", timeout=10") == []


def test_a_web_views_call_is_not_a_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = run(tmp_path, monkeypatch, timeout=", timeout=10")
    assert not any("views.py" in f for f in found)


def test_a_session_with_a_mounted_adapter_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounted = """import requests
from requests.adapters import HTTPAdapter

session = requests.Session()
session.mount("https://", TimeoutAdapter(HTTPAdapter))


def extract():
    return session.get("https://example.com/catalog").json()


def transform(data):
    return data
"""
    write(tmp_path, {"catalog/etl/xpro.py": mounted})
    run_quiet = run(tmp_path, monkeypatch, timeout=", timeout=10")
    # run() rewrites xpro.py; write the mounted one again and diagnose without rewriting
    write(tmp_path, {"catalog/etl/xpro.py": mounted})
    report = diagnose(None, ".", history=False, celery="catalog/celery.py")
    assert run_quiet == []
    assert [f for f in report.findings if f.rule == "client-timeout-missing"] == []


def test_a_call_it_cannot_resolve_is_said_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(tmp_path, monkeypatch, timeout="")
    write(tmp_path, {"catalog/tasks.py": TASKS + "\n\n@app.task\ndef odd():\n"
                     "    pipelines.missing_etl()\n"})  # fmt: skip
    report = diagnose(None, ".", history=False, celery="catalog/celery.py")
    note = next(n for n in report.notes if n.startswith("Celery task code:"))
    assert "1 call(s) of project functions not followed" in note

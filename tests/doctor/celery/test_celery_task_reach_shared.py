"""Code a Celery task runs through objects the project makes once, at module level, cut
from a document platform's environment package: `storage = AwsStorage()` in aws/storage.py and
`session = requests.Session()` in common/session.py, re-exported by an environment package that
picks a backend at import time, and called from task modules as `storage.fetch_url(...)` and
`httpsub.post(...)`; and a Solr admin helper calling `getattr(session, method)(url, ...)`.
Quiet twin: the same code with timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """from celery import Celery

app = Celery("papers")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
ENVIRONMENT = """import os

environment = os.environ["ENVIRONMENT"]

if environment == "local":
    from .local.storage import storage
    from .aws.httpsub import httpsub
elif environment == "aws":
    from .aws.httpsub import httpsub
    from .aws.storage import storage
"""
SESSION = "import requests\n\nsession = requests.Session()\n"
AWS_HTTPSUB = "from ...session import session as httpsub\n"
AWS_STORAGE = """import requests


class AwsStorage:
    def fetch_url(self, url, file_name, auth=None):
        with requests.get(url, stream=True, auth=auth{timeout}) as response:
            response.raise_for_status()
            return response.content


storage = AwsStorage()
"""
LOCAL_STORAGE = """from ..aws.storage import AwsStorage


class LocalStorage(AwsStorage):
    pass


storage = LocalStorage()
"""
TASKS = """from celery import shared_task

from papers.common.environment import httpsub, storage
from papers.documents import solr


@shared_task
def fetch_file_url(file_url, path, auth=None):
    storage.fetch_url(file_url, path, auth)


@shared_task
def process(url, payload):
    response = httpsub.post(url, json=payload{timeout})
    response.raise_for_status()


@shared_task
def solr_reindex_all(collection_name):
    solr.update_alias(collection_name)
"""
SOLR = """import requests


def _solr_admin_request(method, url, data):
    session = requests.Session()
    return getattr(session, method)(url, data=data{timeout})


def update_alias(collection_name):
    _solr_admin_request("get", "http://solr:8983/solr/admin/collections", {"name": collection_name})
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str) -> list[str]:
    write(tmp_path, {
        "papers/__init__.py": "", "papers/celery.py": CELERY,
        "papers/common/__init__.py": "", "papers/common/session.py": SESSION,
        "papers/common/environment/__init__.py": ENVIRONMENT,
        "papers/common/environment/aws/__init__.py": "",
        "papers/common/environment/aws/httpsub.py": AWS_HTTPSUB,
        "papers/common/environment/aws/storage.py": AWS_STORAGE.replace("{timeout}", timeout),
        "papers/common/environment/local/__init__.py": "",
        "papers/common/environment/local/storage.py": LOCAL_STORAGE,
        "papers/documents/__init__.py": "",
        "papers/documents/tasks.py": TASKS.replace("{timeout}", timeout),
        "papers/documents/solr.py": SOLR.replace("{timeout}", timeout),
        "papers/settings.py": 'CELERY_BROKER_URL = "redis://redis:6379/0"\n',
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="papers/celery.py")
    return sorted(f"{f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == "client-timeout-missing")  # fmt: skip


def test_calls_through_module_level_objects_and_dynamic_verbs_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "")
    assert [f.split(" ", 1)[0] for f in found] == [
        "papers/common/environment/aws/storage.py:6",  # storage.fetch_url(): an inherited method
        "papers/documents/solr.py:6",  # getattr(session, method)(...)
        "papers/documents/tasks.py:14",  # httpsub.post: the shared requests.Session
    ]
    assert "Celery task 'fetch_file_url' calls requests.get() through" in found[0]
    assert "AwsStorage.fetch_url()" in found[0]


def test_the_same_code_with_timeouts_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, ", timeout=10") == []

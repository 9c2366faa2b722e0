"""Code a Celery task runs through a Django row's own attributes, cut from a document
platform's add-on tasks: the task loops over `AddOn.objects.filter(...)` and calls a method on
each row; the method reads `self.api_headers`, a property that reads another property, which
reads `self.github_installation.token`: a ForeignKey to a model whose `token` property posts
for an access token. Each read runs the code as surely as a call. Quiet twin: the same code
with timeouts, and a loop over `values_list(...)`, whose items are no rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """from celery import Celery

app = Celery("platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
TASKS = """from celery import shared_task

from platform_app.addons.models import AddOn


@shared_task
def update_config(repository):
    for addon in AddOn.objects.filter(repository=repository, removed=False):
        addon.update_config()


@shared_task
def names(repository):
    for name in AddOn.objects.filter(repository=repository).values_list("name", flat=True):
        name.update_config()
"""
MODELS = """import requests
from django.db import models


class AddOn(models.Model):
    repository = models.CharField(max_length=140)
    github_installation = models.ForeignKey(
        "addons.GitHubInstallation", on_delete=models.PROTECT, null=True
    )

    @property
    def api_url(self):
        return f"https://api.github.com/repos/{self.repository}"

    @property
    def api_headers(self):
        return {"Authorization": f"Bearer {self.github_token}"}

    @property
    def github_token(self):
        return self.github_installation.token

    def update_config(self):
        resp = requests.get(
            f"{self.api_url}/contents/config.yaml",
            headers={**self.api_headers, "Accept": "application/vnd.github.v3.raw"}{timeout},
        )
        return resp.text


class GitHubInstallation(models.Model):
    iid = models.IntegerField(unique=True)

    @property
    def token(self):
        resp = requests.post(
            f"https://api.github.com/app/installations/{self.iid}/access_tokens"{timeout}
        )
        return resp.json()["token"]
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timeout: str) -> list[str]:
    write(tmp_path, {
        "platform_app/__init__.py": "", "platform_app/celery.py": CELERY,
        "platform_app/addons/__init__.py": "", "platform_app/addons/tasks.py": TASKS,
        "platform_app/addons/models.py": MODELS.replace("{timeout}", timeout),
        "platform_app/settings.py": 'CELERY_BROKER_URL = "redis://redis:6379/0"\n',
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="platform_app/celery.py")
    return sorted(f"{f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == "client-timeout-missing")  # fmt: skip


def test_calls_through_looped_rows_properties_and_relations_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "")
    assert [f.split(" ", 1)[0] for f in found] == [
        "platform_app/addons/models.py:24",  # addon.update_config(), a looped row's method
        "platform_app/addons/models.py:36",  # api_headers -> github_token -> installation.token
    ]
    assert "AddOn.update_config() -> AddOn.api_headers() -> AddOn.github_token() -> " in found[1]
    assert "GitHubInstallation.token()" in found[1]


def test_the_same_code_with_timeouts_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, ", timeout=10") == []

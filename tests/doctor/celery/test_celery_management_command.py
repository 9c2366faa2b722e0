"""A Helm chart whose worker template sits in a sub-folder of templates/ runs a Django
management command that starts celery itself. Cut from a humanitarian API's
deploy/helm/.../templates/celery/deployment.yaml and api/management/commands/run_celery_prod.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
TEMPLATE = """{{- if .Values.celery.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ template "app.fullname" . }}-celery
spec:
  replicas: {{ .Values.celery.replicaCount }}
  template:
    spec:
      containers:
        - name: {{ .Chart.Name }}-celery
          image: "{{ .Values.api.image.name }}:{{ .Values.api.image.tag }}"
          command: ["python", "/home/app/manage.py", "run_celery_prod"]
{{- end }}
"""
VALUES = "celery:\n  enabled: true\n  replicaCount: 1\napi:\n  image:\n    name: app\n    tag: v1\n"
COMMAND = """import shlex
import subprocess

from django.core.management.base import BaseCommand


def get_celery_cmd(queues, celery_args=None):
    cmd = f"celery -A main worker -Q {{queues}} -l info{limit}"
    if celery_args:
        cmd = f"{{cmd}} {{' '.join(celery_args)}}"
    return cmd


class Command(BaseCommand):
    def handle(self, *_, **options):
        subprocess.call(shlex.split(get_celery_cmd(options["queues"])))
"""
COMMAND_FILE = "api/management/commands/run_celery_prod.py"


def chart() -> dict[str, str]:
    return {"settings.py": SETTINGS, "chart/Chart.yaml": "name: app\nversion: 1\n",
            "chart/values.yaml": VALUES,
            "chart/templates/celery/deployment.yaml": TEMPLATE}  # fmt: skip


@pytest.mark.parametrize(
    ("limit", "found"),
    [("", ["celery-task-unbounded chart/templates/celery/deployment.yaml:11"]),
     (" --time-limit=20", [])],
)  # fmt: skip
def test_a_management_command_that_starts_celery_is_the_containers_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    write(tmp_path, {**chart(), COMMAND_FILE: COMMAND.format(limit=limit)})
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    assert [" ".join(f.split()[:2]) for f in located(report)] == found


def test_quiet_twin_a_management_command_that_starts_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = COMMAND.format(limit="").replace("worker", "beat")
    write(tmp_path, {**chart(), COMMAND_FILE: command})
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="settings.py")
    assert located(report) == []

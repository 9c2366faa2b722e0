"""Celery task code in the forms real projects write, each with a quiet twin:

- a source root inside a directory no import can name (`qgis-app/plugins/...`, run with
  `qgis-app` on sys.path; cut from a plugin site's periodic XML task and its version helper);
- mailbox clients (imaplib, poplib) opened to a user's server with no timeout (cut from a
  webmail's IMAP import task);
- `time.sleep` inside a task's loop, pacing chunks of agents (cut from a remote-management
  tool's update tasks), against a single jitter sleep before one send;
- `acks_late=True, reject_on_worker_lost=True` on one task's decorator (cut from a file
  transfer service's import task), against a task that sets acks_late alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
app = Celery("plugins")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
"""
SETTINGS = 'CELERY_BROKER_URL = "amqp://rabbitmq:5672"\n'
TASKS_INIT = "from plugins.tasks.generate_plugins_xml import *  # noqa\n"
GENERATE = """import requests
from celery import shared_task
from plugins.utils import get_version_from_label


@shared_task
def generate_plugins_xml(site=""):
    plugins_url = "{{}}/plugins/plugins_new.xml".format(site)

    def fetch_and_save_xml(version_or_label, is_label=False):
        version = get_version_from_label(version_or_label) if is_label else version_or_label
        response = requests.get(f"{{plugins_url}}?qgis={{version}}"{timeout})
        return response.text

    for label in ["latest", "stable", "ltr"]:
        fetch_and_save_xml(label, is_label=True)
"""
UTILS = """import requests


def get_version_from_label(param):
    url = "https://version.qgis.org/version.json"

    response = requests.get(url{timeout})
    return response.json()[param]
"""
MAIL = """import imaplib
import poplib
import time

from celery import shared_task

from plugins.celery import app


@shared_task(bind=True)
def import_imap_messages_task(self, imap_server, imap_port, use_ssl):
    if use_ssl:
        imap = imaplib.IMAP4_SSL(imap_server, imap_port{timeout})
    else:
        imap = imaplib.IMAP4(imap_server, imap_port{timeout})
    pop = poplib.POP3(imap_server{timeout})
    return imap, pop


@app.task
def bulk_check_for_updates_task(agents):
    chunks = (agents[i : i + 40] for i in range(0, len(agents), 40))
    for chunk in chunks:
        for agent in chunk:
            agent.check()
        {sleep}


@app.task
def agent_outage_email_task(pk):
    time.sleep(0.5)  # one jitter before one send: no loop
    return pk


@shared_task(acks_late=True{reject})
def import_drive_file_task(transfer_file_id):
    return transfer_file_id


@app.task
def push_with_retries(items):
    for item in items:
        attempts = 0
        while attempts < 3:
            attempts += 1
            try:
                item.push()
            except OSError:
                time.sleep(2)  # a retry's back-off inside a walk over items: the retry's
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: bool) -> list[str]:
    timeout = ", timeout=10" if quiet else ""
    write(tmp_path, {
        "qgis-app/settings.py": SETTINGS,
        "qgis-app/plugins/__init__.py": "",
        "qgis-app/plugins/celery.py": CELERY,
        "qgis-app/plugins/tasks/__init__.py": TASKS_INIT,
        "qgis-app/plugins/tasks/generate_plugins_xml.py": GENERATE.format(timeout=timeout),
        "qgis-app/plugins/utils.py": UTILS.format(timeout=timeout),
        "qgis-app/plugins/mail.py": MAIL.format(
            timeout=timeout, sleep="agent.ping()" if quiet else "time.sleep(1)",
            reject="" if quiet else ", reject_on_worker_lost=True"),
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="qgis-app/settings.py")
    rules = ("client-timeout-missing", "sleep-loop", "celery-reject-on-worker-lost-loop")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}"
                  for f in report.findings if f.rule in rules)  # fmt: skip


def test_each_class_is_reported_on_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, quiet=False) == [
        "celery-reject-on-worker-lost-loop qgis-app/plugins/mail.py:35",
        "client-timeout-missing qgis-app/plugins/mail.py:13",  # IMAP4_SSL
        "client-timeout-missing qgis-app/plugins/mail.py:15",  # IMAP4
        "client-timeout-missing qgis-app/plugins/mail.py:16",  # POP3
        "client-timeout-missing qgis-app/plugins/tasks/generate_plugins_xml.py:12",  # nested def
        "client-timeout-missing qgis-app/plugins/utils.py:7",  # under `qgis-app/`
        "sleep-loop qgis-app/plugins/mail.py:26",
    ]


def test_the_quiet_twins_stay_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(tmp_path, monkeypatch, quiet=True) == []


def test_an_app_wide_loop_is_one_finding_on_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(tmp_path, monkeypatch, quiet=False)  # writes the project; its settings rewritten below
    write(tmp_path, {"qgis-app/settings.py": SETTINGS + "CELERY_TASK_ACKS_LATE = True\n"
                     "CELERY_TASK_REJECT_ON_WORKER_LOST = True\n"})  # fmt: skip
    report = diagnose(None, ".", history=False, celery="qgis-app/settings.py")
    found = [f"{f.location.path}:{f.location.line}" for f in report.findings
             if f.rule == "celery-reject-on-worker-lost-loop"]  # fmt: skip
    assert found == ["qgis-app/settings.py:3"]


IMPORT_SERVICE = """from django.core.files.storage import default_storage

from plugins.mail import import_drive_file_task


def import_file(file, recipient):
    file_content = file.read()
    if file.name.endswith(".mbox"):
        task = import_drive_file_task.delay(file_content, str(recipient.id))
    else:
        task = import_drive_file_task.apply_async(
            args=[file.read()], countdown=5
        )
    return task.id


def import_file_by_key(file, recipient):
    key = default_storage.save(file.name, file)
    read_only = file.readable()
    return import_drive_file_task.delay(key, read_only, str(recipient.id))
"""


def test_file_contents_sent_to_a_task_are_a_blob_and_a_key_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(tmp_path, monkeypatch, quiet=True)
    write(tmp_path, {"qgis-app/plugins/services.py": IMPORT_SERVICE})
    report = diagnose(None, ".", history=False, celery="qgis-app/settings.py")
    found = [f"{f.location.path}:{f.location.line}" for f in report.findings
             if f.rule == "payload-blob"]  # fmt: skip
    # the .delay of a name bound to file.read(), and apply_async(args=[file.read()]) on the
    # callee's line; the task sent a storage key (import_file_by_key) stays quiet
    assert found == ["qgis-app/plugins/services.py:9", "qgis-app/plugins/services.py:11"]


BUILD_TASKS = """import time

import requests
from invoke import task


@task
def wait_for_services(context):
    while True:
        if requests.get("http://localhost:8080/health").ok:
            return
        time.sleep(5)
"""


def test_a_build_scripts_invoke_task_is_no_celery_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(tmp_path, monkeypatch, quiet=True)
    write(tmp_path, {"tasks.py": BUILD_TASKS})
    report = diagnose(None, ".", history=False, celery="qgis-app/settings.py")
    assert not [f for f in report.findings if f.location.path == "tasks.py"]

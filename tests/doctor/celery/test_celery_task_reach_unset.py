"""A helper's `timeout=None` parameter the task never passes, cut from a text library's Slack
helper: `send_message(channel, ..., timeout=None)` posts with `requests.post(SLACK_URL,
json=..., timeout=timeout)`, and the upload task calls `send_message('#signal', 'Text Upload',
title, results)`: the post has no timeout. Quiet twin: the task passes `timeout=5`."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CELERY = """from celery import Celery

app = Celery("library")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
SLACK = """import requests
from library.settings import SLACK_URL


def send_message(channel, username, pretext, text, fallback=None, icon_emoji=':robot_face:',
                 color="#a30200", timeout=None, mrkdwn=False):
    attachment = {"fallback": fallback or pretext, "color": color, "pretext": pretext,
                  "text": text}
    post_object = {"icon_emoji": icon_emoji, "username": username, "channel": channel,
                   "attachments": [attachment]}
    response = requests.post(SLACK_URL, json=post_object, timeout=timeout)
    return response
"""
TASKS = """from library.celery import app
from library.slack import send_message


@app.task
def upload_text(title, results):
    send_message('#engineering-signal', 'Text Upload', title, results{passed})
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passed: str) -> list[str]:
    write(tmp_path, {
        "library/__init__.py": "", "library/celery.py": CELERY, "library/slack.py": SLACK,
        "library/tasks.py": TASKS.replace("{passed}", passed),
        "library/settings.py": 'CELERY_BROKER_URL = "redis://redis:6379/0"\nSLACK_URL = ""\n',
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="library/celery.py")
    return sorted(f"{f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule == "client-timeout-missing")  # fmt: skip


def test_a_none_timeout_parameter_the_task_leaves_out_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, "")
    assert [f.split(" ", 1)[0] for f in found] == ["library/slack.py:11"]
    assert "(timeout=None: the caller passes none)" in found[0]


def test_quiet_twin_the_task_passes_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, ", timeout=5") == []

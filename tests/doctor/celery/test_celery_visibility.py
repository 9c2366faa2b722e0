"""The broker's visibility timeout against late-acknowledged tasks: read from an env helper
inside broker_transport_options (its default said to be one, unknown when it has none), and
compared with a task's own time_limit when that replaces a shorter global one."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

RULE = "celery-visibility-below-time-limit"

# Cut from digital-land/async-request-backend request-processor-celery/src/celeryconfig.py: an
# SQS broker whose visibility timeout is an environment read with a default, next to a region
# with none, and late acks for every task.
CELERYCONFIG = """import os

broker_url = os.environ.get("CELERY_BROKER_URL", "sqs://")
broker_transport_options = {{
    "region": os.environ["CELERY_BROKER_REGION"],
    "is_secure": os.environ.get("CELERY_BROKER_IS_SECURE", "false").lower() == "true",
    "visibility_timeout": {visibility}
}}

broker_connection_retry_on_startup = True
task_acks_late = True
task_time_limit = 1200
"""


def findings(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch,
             celery: str) -> tuple[list[str], list[str]]:  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery=celery)
    found = [f"{f.rule} {f.location.path}:{f.location.line} "
             + " / ".join(c.text() for c in f.clocks) for f in report.findings]  # fmt: skip
    return found, [s.reason for s in report.skipped]


def test_visibility_default_of_an_env_read_inside_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not SQS's 1800 s default: the options say 900 unless the environment says otherwise.
    text = CELERYCONFIG.format(
        visibility='int(os.environ.get("CELERY_BROKER_VISIBILITY_TIMEOUT", "900"))'
    )
    found, _ = findings(tmp_path, {"celeryconfig.py": text}, monkeypatch, "celeryconfig.py")
    (line,) = [f for f in found if f.startswith(RULE)]
    assert "broker visibility_timeout 900 s" in line
    assert "the default of CELERY_BROKER_VISIBILITY_TIMEOUT" in line


def test_visibility_read_without_a_default_is_unknown_not_the_transport_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = CELERYCONFIG.format(visibility='int(os.environ["CELERY_BROKER_VISIBILITY_TIMEOUT"])')
    found, skipped = findings(tmp_path, {"celeryconfig.py": text}, monkeypatch, "celeryconfig.py")
    assert not [f for f in found if f.startswith(RULE)]
    assert any("visibility_timeout is read from the environment" in s for s in skipped)


# Settings cut from nekeal/cookiecutter-django-api (settings/conf/celery_settings.py: late acks,
# a 5-minute global limit, Redis at its 1 h default visibility); the task in the shape of
# bram2w/baserow's export tasks (contrib/database/export/tasks.py: its own soft 1 h and hard
# 1 h + 60 s limits), which replace the global one for that task.
DJANGO_SETTINGS = """import os

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://redis:6379/0")
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_TIME_LIMIT = 60 * 5
CELERY_TASK_SOFT_TIME_LIMIT = 60
"""
EXPORT_TASKS = """from celery import shared_task

EXPORT_SOFT_TIME_LIMIT = 60 * 60
EXPORT_TIME_LIMIT = EXPORT_SOFT_TIME_LIMIT + {extra}


@shared_task(
    bind=True,
    soft_time_limit=EXPORT_SOFT_TIME_LIMIT,
    time_limit=EXPORT_TIME_LIMIT,
)
def run_export_job(self, job_id):
    return job_id


@shared_task
def send_email(address):
    return address
"""


def test_task_own_limit_past_the_visibility_under_global_late_acks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "proj/settings.py": DJANGO_SETTINGS,
        "proj/export/tasks.py": EXPORT_TASKS.format(extra=60),
    }
    found, _ = findings(tmp_path, files, monkeypatch, "proj/settings.py")
    (line,) = [f for f in found if f.startswith(RULE)]
    assert line.startswith(f"{RULE} proj/export/tasks.py:")
    assert "run_export_job time_limit 3660 s" in line and "visibility_timeout 3600 s" in line


def test_task_own_limit_below_the_visibility_quiet_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "proj/settings.py": DJANGO_SETTINGS,
        "proj/export/tasks.py": EXPORT_TASKS.format(extra=-60),
    }
    found, _ = findings(tmp_path, files, monkeypatch, "proj/settings.py")
    assert not [f for f in found if f.startswith(RULE)]

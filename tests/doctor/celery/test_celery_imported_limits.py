"""Task limits read from a project config module by name (`from src.config import
HDX_HARD_TASK_LIMIT`), where the module reads the environment and falls back to configparser's
default (`os.environ.get("X") or config.get("HDX", "X", fallback=6 * 60 * 60)`): the limit is
that fallback while neither the environment nor the ini file sets it, and is said to be a
default. Cut from a FastAPI + Celery export service whose worker runs as a systemd unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

CONFIG = """import os
from configparser import ConfigParser

CONFIG_FILE_PATH = "config.txt"
config = ConfigParser()
config.read(CONFIG_FILE_PATH)

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or config.get(
    "CELERY", "CELERY_BROKER_URL", fallback="redis://localhost:6379/0"
)
HDX_SOFT_TASK_LIMIT = os.environ.get("HDX_SOFT_TASK_LIMIT") or config.get(
    "HDX", "HDX_SOFT_TASK_LIMIT", fallback={soft}
)
HDX_HARD_TASK_LIMIT = os.environ.get("HDX_HARD_TASK_LIMIT") or config.get(
    "HDX", "HDX_HARD_TASK_LIMIT", fallback={hard}
)
"""
WORKER = """from celery import Celery

from src.config import CELERY_BROKER_URL as celery_broker_uri
from src.config import (
    HDX_HARD_TASK_LIMIT,
    HDX_SOFT_TASK_LIMIT,
)

celery = Celery("Raw Data API")
celery.conf.broker_url = celery_broker_uri
celery.conf.worker_prefetch_multiplier = 1


@celery.task(
    bind=True,
    name="process_custom_request",
    time_limit=HDX_HARD_TASK_LIMIT,
    soft_time_limit=HDX_SOFT_TASK_LIMIT,
)
def process_custom_request(self, params):
    return params
"""
UNIT = """[Unit]
Description=Raw Data Celery Workers

[Service]
Type=simple
WorkingDirectory=/opt/raw-data-api
ExecStart=/opt/raw-data-api/.virtualenv/bin/celery --app API.api_worker worker --loglevel=INFO
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, soft: str, hard: str) -> list[str]:
    write(tmp_path, {"src/__init__.py": "", "src/config.py": CONFIG.format(soft=soft, hard=hard),
                     "API/__init__.py": "", "API/api_worker.py": WORKER,
                     "infra/systemd/raw-data-worker.service": UNIT})  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="API/api_worker.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line} {f.message}"
                  for f in report.findings if f.rule.startswith("celery-"))  # fmt: skip


def test_fallback_limit_past_the_units_default_stop_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, soft="5 * 60 * 60", hard="6 * 60 * 60")
    assert len(found) == 1
    assert found[0].startswith("celery-grace-below-time-limit infra/systemd/raw-data-worker"
                               ".service:4 ")  # fmt: skip
    assert "21600 s" in found[0] and "90 s" in found[0]


def test_fallback_limit_within_the_stop_timeout_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, soft="50", hard="60") == []


def test_limit_from_the_environment_alone_is_unknown_not_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"src/config.py": 'import os\nHDX_SOFT_TASK_LIMIT = os.environ.get("S")\n'
                     'HDX_HARD_TASK_LIMIT = os.environ.get("H") or os.environ.get("H2")\n'
                     'CELERY_BROKER_URL = "redis://redis:6379/0"\n'})  # fmt: skip
    found = run_only(tmp_path, monkeypatch)
    assert not any("grace-below-time-limit" in f for f in found)


def run_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    write(tmp_path, {"API/api_worker.py": WORKER, "infra/systemd/raw-data-worker.service": UNIT})
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="API/api_worker.py")
    return [f"{f.rule} {f.location}" for f in report.findings]

"""Django's split settings: the deployed module star-imports a common one
(`from config.settings.common import *`), whose Celery settings hold unless it sets them again.
Cut from a Django project's config/settings/{common,docker}.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

COMMON = """from kombu.serialization import register

CELERY_WORKER_MAX_TASKS_PER_CHILD = 1
CELERY_ACCEPT_CONTENT = ["seed_json", "pickle"]
CELERY_TASK_SERIALIZER = "seed_json"
"""
DOCKER = """import os

from config.settings.common import *  # noqa: F403

CELERY_BROKER_URL = "redis://db-redis:6379/1"
{override}
"""


@pytest.mark.parametrize(
    ("override", "expected"),
    [("", ["celery-pickle-enabled config/settings/common.py:4"]),
     ('CELERY_ACCEPT_CONTENT = ["json"]', [])],  # the quiet twin: docker.py sets it again
)  # fmt: skip
def test_settings_star_imported_from_a_common_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, expected: list[str]
) -> None:
    files = {"config/__init__.py": "", "config/settings/__init__.py": "",
             "config/settings/common.py": COMMON,
             "config/settings/docker.py": DOCKER.format(override=override)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="config/settings/docker.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if "pickle" in f]
    assert found == expected


def test_a_relative_star_import_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "proj/settings/base.py": COMMON,
        "proj/settings/prod.py": "from .base import *\nBROKER_URL = 'redis://r:6379/0'\n",
    }
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="proj/settings/prod.py")  # fmt: skip
    assert [" ".join(f.split(" ")[:2]) for f in located(report) if "pickle" in f] == [
        "celery-pickle-enabled proj/settings/base.py:4"
    ]

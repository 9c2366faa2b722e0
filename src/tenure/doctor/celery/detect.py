"""Find a project's Celery settings when --celery is not given: the file that configures
Celery most (Django `CELERY_*` settings, `Celery(broker=...)`, `app.conf.update(...)`), so that
`tenure doctor .` on a Celery project audits it without being told where to look."""

from __future__ import annotations

import re

from tenure.doctor.walk import FoundFile, is_development_name

SETTING = re.compile(rb"^\s*(CELERY_[A-Z_]+|BROKER_URL|broker_url|task_[a-z_]+)\s*[:=]", re.M)
APP = re.compile(rb"\bCelery\(|\.conf\.update\(|config_from_object\(")
# `Celery("tasks", broker=os.environ.get("REDIS_URL"))`: the app's constructor configures it.
CONSTRUCTED = re.compile(rb"\bCelery\([^)]*\b(?:broker|backend)\s*=")


def find_celery_settings(files: list[FoundFile]) -> FoundFile | None:
    """The Python file with the most Celery settings (at least two, or a Celery app with one);
    ties go to the shallower path. None when nothing configures Celery."""
    best: tuple[int, int, str] | None = None
    chosen: FoundFile | None = None
    for found in files:
        if b"celery" not in found.data.lower() or is_development_name(found.rel):
            continue
        settings = len(SETTING.findall(found.data)) + len(CONSTRUCTED.findall(found.data))
        score = settings + (1 if APP.search(found.data) else 0)
        if score < 2 or settings == 0:
            continue
        key = (-score, found.rel.count("/"), found.rel)
        if best is None or key < best:
            best, chosen = key, found
    return chosen

"""celery-eta-beyond-visibility on the forms real task modules write a delay in: a settings
name (`countdown=settings.ZIP_EXPORT_COUNTDOWN`), a module constant, and a retry backoff
scaled by the retry count (`countdown=60 * self.request.retries`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

RULE = "celery-eta-beyond-visibility"

# Cut from onadata (onadata/settings/common.py, onadata/celeryapp.py): Django settings under
# the CELERY namespace, a Redis visibility timeout of 10 s, the export clean-up's countdown.
SETTINGS = """CELERY_BROKER_URL = "redis://localhost:6379/0"
CELERY_BROKER_TRANSPORT_OPTIONS = {{"visibility_timeout": 10}}
ZIP_EXPORT_COUNTDOWN = {countdown}  # 1 hour
"""

# Cut from onadata/apps/viewer/tasks.py and onadata/libs/utils/xform_utils.py.
TASKS = """import sys

from django.conf import settings

from onadata.celeryapp import app

BACKOFF = {backoff}


@app.task()
def create_zip_export(username, id_string, export_id):
    gen_export = generate_export(username, id_string, export_id)
    if not settings.TESTING_MODE:
        delete_export.apply_async(
            (),
            {{"export_id": gen_export.id}},
            countdown=settings.ZIP_EXPORT_COUNTDOWN,
        )


@app.task(bind=True, max_retries=3)
def set_project_perms_to_xform_async(self, xform_id, project_id):
    try:
        _set_project_perms()
    except (Project.DoesNotExist, XForm.DoesNotExist) as e:
        # let's retry if the record may still not be available in read replica.
        self.retry(countdown={factor} * self.request.retries)


@app.task(bind=True)
def propagate_project_permissions_async(self, project_id):
    try:
        propagate_project_permissions(project_id)
    except ExternalServiceRequestError as exc:
        self.retry(exc=exc, countdown=BACKOFF)
"""


def eta_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **values: object) -> list[str]:
    write(tmp_path, {
        "onadata/settings/common.py": SETTINGS.format(**values),
        "onadata/apps/viewer/tasks.py": TASKS.format(**values),
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="onadata/settings/common.py")
    return [
        f"{f.location.path}:{f.location.line} " + " / ".join(c.text() for c in f.clocks)
        for f in report.findings
        if f.rule == RULE
    ]


def test_delays_from_settings_constants_and_retry_backoff_pass_the_visibility_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = eta_findings(tmp_path, monkeypatch, countdown=3600, factor=60, backoff=120)
    assert [f.split(" ")[0] for f in found] == [
        "onadata/apps/viewer/tasks.py:14",
        "onadata/apps/viewer/tasks.py:27",
        "onadata/apps/viewer/tasks.py:35",
    ], found
    assert "countdown/eta 3600 s" in found[0]
    assert "countdown/eta 60 s" in found[1]
    assert "countdown/eta 120 s" in found[2]


def test_delays_below_the_visibility_timeout_are_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same forms, each short enough that the broker never restores the waiting message.
    assert eta_findings(tmp_path, monkeypatch, countdown=5, factor=3, backoff=2) == []


# Cut from kpi (kobo/apps/subsequences/models.py, kobo/settings/base.py): one send per item,
# each `index * delay_between_jobs` later, behind a Redis visibility timeout of 60 * (10**2) s.
KPI_SETTINGS = """CELERY_BROKER_URL = "redis://localhost:6379/1"
CELERY_BROKER_TRANSPORT_OPTIONS = {
    'fanout_patterns': True,
    'fanout_prefix': True,
    'visibility_timeout': 60 * (10**2),  # Longest ETA for RestService (seconds)
}
"""

KPI_MODELS = """class SubsequenceBulkAction(models.Model):
    def _schedule_batch_tasks(self) -> None:
        from .tasks import start_bulk_item_job

        delay_between_jobs = self._get_delay_between_jobs()
        item_ids = list(self.items.values_list('pk', flat=True))

        for index, item_id in enumerate(item_ids):
            countdown = {countdown}
            start_bulk_item_job.apply_async(
                args=(item_id,),
                countdown=countdown,
            )
"""


def loop_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, countdown: str) -> list[str]:
    write(tmp_path, {
        "kobo/settings/base.py": KPI_SETTINGS,
        "kobo/apps/subsequences/models.py": KPI_MODELS.format(countdown=countdown),
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="kobo/settings/base.py")
    return [
        f"{f.location.path}:{f.location.line} " + " / ".join(c.text() for c in f.clocks)
        for f in report.findings
        if f.rule == RULE
    ]


def test_a_countdown_spread_over_a_loop_without_a_cap_passes_the_visibility_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    countdown = "(index * delay_between_jobs) if delay_between_jobs else 0"
    (found,) = loop_findings(tmp_path, monkeypatch, countdown)
    assert found.startswith("kobo/apps/subsequences/models.py:10 countdown/eta unbounded"), found
    assert "visibility_timeout 6000 s" in found, found


@pytest.mark.parametrize(
    "countdown",
    [
        # notifications-api's stagger over a fixed five minutes, and a capped spread.
        "(index / len(item_ids)) * 300",
        "min(index * delay_between_jobs, 600)",
    ],
)
def test_a_stagger_over_a_fixed_period_or_a_capped_spread_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, countdown: str
) -> None:
    assert loop_findings(tmp_path, monkeypatch, countdown) == []

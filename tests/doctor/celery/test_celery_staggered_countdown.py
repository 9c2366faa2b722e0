"""A fan-out staggered by a countdown that grows with the loop's counter: the last message
waits len(items) x step, and nothing caps the number of items. Cut from a Django app's bulk
action (`for index, item_id in enumerate(item_ids): countdown = (index * delay) if delay else 0;
start_item.apply_async(args=(item_id,), countdown=countdown)`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\n"
MODEL = """from app.tasks import start_bulk_item_job


class BulkAction:
    def start(self):
        delay_between_jobs = self._get_delay_between_jobs()
        item_ids = list(self.items.values_list('pk', flat=True))
        for index, item_id in enumerate(item_ids):
            countdown = {countdown}
            start_bulk_item_job.apply_async(
                args=(item_id,),
                countdown=countdown,
            )
"""


@pytest.mark.parametrize(
    ("countdown", "expected"),
    [("(index * delay_between_jobs) if delay_between_jobs else 0",
      ["celery-eta-beyond-visibility app/models.py:10"]),
     # the quiet twins: a cap, and a delay that does not grow with the counter
     ("min(index * delay_between_jobs, 600)", []),
     ("delay_between_jobs", [])],
)  # fmt: skip
def test_a_countdown_growing_with_the_loop_counter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, countdown: str, expected: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "app/models.py": MODEL.format(countdown=countdown)}
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="settings.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if "eta-beyond" in f]
    assert found == expected

"""Retention settings: the App's defaults, a job's and a dispatch's overrides, and their
validation ("expected X, got Y"), seen through what `app.prune()` deletes on SQLite."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from tenure.core.errors import ConfigError
from tenure.core.retention import DEFAULT_KEEP_FAILED, DEFAULT_KEEP_SUCCEEDED, Keep
from tenure.testing import drain


def test_the_defaults_are_a_day_and_two_weeks(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")
    assert app.keep == Keep(86400.0, 14 * 86400.0)
    assert timedelta(days=1) == DEFAULT_KEEP_SUCCEEDED
    assert timedelta(days=14) == DEFAULT_KEEP_FAILED
    assert tenure.App(f"sqlite:///{tmp_path / 't.db'}", keep_failed=None).keep.failed is None


def test_bad_settings_say_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"keep_succeeded: expected a timedelta.*got '1d'"):
        tenure.App(f"sqlite:///{tmp_path / 't.db'}", keep_succeeded="1d")  # type: ignore[arg-type]
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")
    with pytest.raises(ConfigError, match=r"job 'f': keep_failed: expected a duration >= 0"):

        @app.job(name="f", keep_failed=-5)
        def f() -> None: ...

    @app.job
    def g() -> None: ...

    with pytest.raises(ConfigError, match="keep_succeeded: expected a timedelta"):
        g.options(keep_succeeded=True)  # type: ignore[arg-type]


def test_a_dispatch_overrides_its_job_which_overrides_the_app(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}", keep_succeeded=0)

    @app.job(keep_succeeded=timedelta(hours=1))
    def hourly() -> None: ...

    @app.job
    def plain() -> None: ...

    gone = plain.dispatch()
    kept_by_job = hourly.dispatch()
    gone_by_dispatch = hourly.options(keep_succeeded=0).dispatch()
    kept_by_dispatch = plain.options(keep_succeeded=None).dispatch()
    drain(app)
    deadline = time.monotonic() + 10
    while app.prune(dry_run=True).jobs < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the store's clock moves past both ends: due with a 0 s window
    assert app.prune().jobs == 2
    assert app.find_job(gone.id) is None and app.find_job(gone_by_dispatch.id) is None
    assert app.get_job(kept_by_job.id).state == "succeeded"
    assert app.get_job(kept_by_dispatch.id).state == "succeeded"

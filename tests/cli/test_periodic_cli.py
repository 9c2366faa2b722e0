"""`tenure periodic list` as users run it, in a process of its own, over a store whose
periodic state real tickers wrote."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from cli.helpers import run_cli
from tenure.periodic import PeriodicTicker, run_id, zone_text
from tenure.testing import drain

JOBS = """
import tenure

app = tenure.App("sqlite:///{db}")

@app.periodic("0 * * * *", tz="Europe/Rome", name="hourly_report")
def hourly_report() -> None:
    pass

@app.periodic("@daily", catch_up="none", name="nightly_cleanup")
def nightly_cleanup() -> None:
    pass
"""


def test_periodic_list_shows_next_due_last_run_and_its_outcome(tmp_path: Path) -> None:
    (tmp_path / "periodicjobs.py").write_text(JOBS.format(db=tmp_path / "p.db"))
    spec = importlib.util.spec_from_file_location("periodicjobs", tmp_path / "periodicjobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.app
    schedule = app.periodic_jobs["hourly_report"].schedule
    latest = schedule.latest_due(time.time())
    if latest % 86400 == 0:
        # At a UTC midnight the daily job falls due too and would run beside the hourly one.
        latest -= 3600
    ticker = PeriodicTicker(app)
    ticker.run_once(latest - 1)  # first seen: the due time before is recorded, not run
    ticker.run_once(latest + 1)  # the next one is dispatched
    assert [j.state for j in drain(app)] == ["succeeded"]
    app.close()

    shown = run_cli("periodic", "list", "--app", "periodicjobs:app", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines() if "_" in line}
    hourly = rows["hourly_report"]
    assert "0 * * * * (Europe/Rome)" in hourly
    assert zone_text(schedule.next_due(time.time()), "Europe/Rome") in hourly
    assert "succeeded" in hourly and run_id("hourly_report", latest) in hourly
    assert "none yet" in rows["nightly_cleanup"] and "catch_up=none" in rows["nightly_cleanup"]

    bare = run_cli("periodic", "list", "--url", f"sqlite:///{tmp_path / 'p.db'}", cwd=tmp_path)
    assert bare.returncode == 0
    assert "defines no periodic job" in bare.stderr and "--app MODULE:ATTR" in bare.stderr

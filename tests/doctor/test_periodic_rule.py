"""periodic-runs-pile-up: a periodic job that comes due again before a run may have ended, with
no overlap key, is warned about at its decorator; one with overlap=, or a long enough
interval, is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import run_in, write

APP = """
import tenure

app = tenure.App("sqlite:///{db}")


@app.periodic("* * * * *")
def every_minute() -> None: ...


@app.periodic("*/2 * * * *", timeout=100, kill_after=10, overlap=True)
def guarded() -> None: ...


@app.periodic("@hourly", timeout=600)
def hourly() -> None: ...


@app.periodic("*/5 * * * * *", timeout=3, kill_after=2)
def every_five_seconds() -> None: ...
"""


def test_only_the_unguarded_periodic_job_whose_runs_outlast_its_interval_is_warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write(tmp_path, {"pjobs.py": APP.format(db=tmp_path / "p.db")})
    report = run_in(project, "pjobs:app", monkeypatch, history=False)
    found = [f for f in report.findings if f.rule == "periodic-runs-pile-up"]
    assert [f.job for f in found] == ["every_minute"]
    [warned] = found
    assert warned.severity == "warning"
    assert "every 60 s, but a run may last 65 s (timeout 60 s + kill_after 5 s)" in warned.message
    assert "overlap=True" in warned.fix
    assert (warned.location.path, warned.location.line) == ("pjobs.py", 7)

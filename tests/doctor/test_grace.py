"""job-outlives-grace is judged by how long a job really runs (the p95 of its attempts in the
store), and by its timeout only when nothing is measured, as one summary line per worker.

With tenure's defaults (timeout 60 s, grace 8 s) every job's timeout exceeds the grace; a
warning per job made `--strict` fail on the README's own Quickstart."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from test_history import WORKER

from tenure.core.records import Ending
from tenure.doctor.model import Severity

from conftest import HERE, rule_ids, run_in, write

README = HERE.parents[1] / "README.md"
FAILING: set[Severity] = {"error", "warning"}


def quickstart() -> str:
    match = re.search(r"```python\n# shop/jobs.py[^\n]*\n(.*?)```", README.read_text(), re.S)
    assert match, "README's Quickstart lost its `# shop/jobs.py` block"
    return match.group(1)


def test_readme_quickstart_passes_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"shop/__init__.py": "", "shop/jobs.py": quickstart()})
    monkeypatch.syspath_prepend(str(tmp_path))
    report = run_in(tmp_path, "shop.jobs:app", monkeypatch)
    assert report.exit_code(strict=True) == 0, [(f.rule, f.message) for f in report.findings]
    assert rule_ids(report) == ["no-worker-deployed", "timeouts-exceed-grace"]
    (summary,) = [f for f in report.findings if f.rule == "timeouts-exceed-grace"]
    assert "'send_invoice' (65 s)" in summary.message and "'ping' (10 s)" in summary.message
    assert not (tmp_path / "tenure.db").exists()  # the doctor created no store


def test_demo_jobs_pass_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENURE_URL", f"sqlite:///{tmp_path / 'demo.db'}")
    report = run_in(tmp_path, "tenure.cli.demo_jobs:app", monkeypatch)
    assert report.exit_code(strict=True) == 0, [(f.rule, f.message) for f in report.findings]
    assert [f.rule for f in report.findings if f.rule == "timeouts-exceed-grace"] == [
        "timeouts-exceed-grace"
    ]


APP = """import tenure

app = tenure.App('sqlite:///{db}')


@app.job(timeout=600)
def slow_import(n: int) -> None: ...


@app.job(timeout=600)
def quick_mail(n: int) -> None: ...
"""


PROCFILE = "worker: tenure worker --app grace_app:app --grace 20\n"


def record_runs(db: Path, name: str, seconds: float, count: int = 3) -> None:
    """Attempts of `name` that lasted `seconds`, recorded as a worker would, then stretched
    in the file (the store stamps its own clock, so a test cannot wait minutes)."""
    import tenure

    app = tenure.App(f"sqlite:///{db}")
    try:
        job = app.job(name=name, timeout=600)(lambda n: None)
        for _ in range(count):
            job_id = job.dispatch(1).id
            (reservation,) = app.store.reserve(queues=["default"], worker=WORKER, lease=30)
            app.store.end_attempt(Ending(job_id=job_id, token=reservation.token))
            with sqlite3.connect(db) as conn:
                conn.execute(
                    "UPDATE tenure_attempts SET started_at = ended_at - ? WHERE job_id = ?",
                    (seconds, job_id),
                )
    finally:
        app.close()


def test_measured_runs_decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "store.db"
    write(tmp_path, {"grace_app.py": APP.format(db=db), "Procfile": PROCFILE})
    record_runs(db, "slow_import", 45.0)
    record_runs(db, "quick_mail", 0.5)
    monkeypatch.syspath_prepend(str(tmp_path))
    report = run_in(tmp_path, "grace_app:app", monkeypatch)
    outlived = [f for f in report.findings if f.rule == "job-outlives-grace"]
    assert [f.job for f in outlived] == ["slow_import"], report.findings
    assert "runs 45 s" in outlived[0].message and "20 s" in outlived[0].message
    assert outlived[0].severity == "warning"
    # Both jobs are measured, so neither is judged by its 600 s timeout.
    assert "timeouts-exceed-grace" not in rule_ids(report)


def test_unmeasured_jobs_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "store.db"
    write(tmp_path, {"grace_app.py": APP.format(db=db), "Procfile": PROCFILE})
    record_runs(db, "quick_mail", 0.5)  # slow_import has no history
    monkeypatch.syspath_prepend(str(tmp_path))
    report = run_in(tmp_path, "grace_app:app", monkeypatch)
    (summary,) = [f for f in report.findings if f.rule == "timeouts-exceed-grace"]
    assert summary.severity == "info"
    assert "1 job(s)" in summary.message and "slow_import" in summary.message
    assert "quick_mail" not in summary.message
    assert "job-outlives-grace" not in rule_ids(report)
    assert str(summary.location) == "Procfile:1"

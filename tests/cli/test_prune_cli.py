"""`tenure prune [--dry-run]` as users run it, in a process of its own, over a SQLite store
whose jobs ran through the real store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import tenure
from cli.helpers import run_cli
from tenure.testing import drain


def test_prune_dry_run_counts_then_prune_deletes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    app = tenure.App(url, keep_succeeded=timedelta(0))

    @app.job
    def tidy(n: int) -> None: ...

    @app.job(keep_succeeded=timedelta(days=30))
    def ledger(n: int) -> None: ...

    old = [tidy.dispatch(1), tidy.dispatch(2)]
    kept = ledger.dispatch(3)
    live = tidy.options(delay=3600).dispatch(4)
    assert [j.state for j in drain(app)] == ["succeeded"] * 3
    app.close()

    dry = run_cli("prune", "--dry-run", "--url", url, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert f"store: {url} (from --url)" in dry.stderr
    assert "would delete 2 jobs" in dry.stdout and "would delete 2 attempts" in dry.stdout
    assert app.find_job(old[0].id) is not None

    done = run_cli("prune", "--url", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "deleted 2 jobs" in done.stdout and "deleted 0 batches" in done.stdout
    assert [app.find_job(h.id) for h in old] == [None, None]
    assert app.get_job(kept.id).state == "succeeded"
    assert app.get_job(live.id).state == "scheduled"

    again = run_cli("prune", "--url", url, cwd=tmp_path)
    assert "deleted 0 jobs" in again.stdout
    app.close()


def test_prune_refuses_a_missing_sqlite_file_and_creates_none(tmp_path: Path) -> None:
    result = run_cli("prune", "--dry-run", cwd=tmp_path)
    assert result.returncode == 2
    assert "no SQLite store at" in result.stderr and "nothing was created" in result.stderr
    assert not (tmp_path / "tenure.db").exists()

"""SQLite keeps whatever a hand edit or a bad migration writes, a text in a number's column
included: such a job reads as damaged, naming the field, and never crashes a reader."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import tenure


def test_a_text_in_a_number_column_reads_as_an_unreadable_field(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    damaged, good = noop.dispatch(), noop.dispatch()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE tenure_jobs SET run_at = 'tomorrow', tries_used = 'x' WHERE id = ?",
            (damaged.id,),
        )
    info = app.get_job(damaged.id)
    assert info.state == "queued"
    assert "unreadable field run_at: 'tomorrow'" in (info.last_error or "")
    assert "unreadable field tries_used: 'x'" in (info.last_error or "")
    listed = {job.id for job in app.store.list_jobs()}
    assert listed == {damaged.id, good.id}
    assert app.get_job(good.id).last_error is None
    app.close()

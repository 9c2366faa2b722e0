"""The context a job sees under execute() (built there field by field, by position, on the
worker's hot path) is the one execute.context() builds."""

from __future__ import annotations

from pathlib import Path

import tenure
from tenure.context import JobContext
from tenure.core.records import Reservation
from tenure.core.retry import Policy
from tenure.worker.execute import SUCCEEDED, context, execute


def test_the_job_s_context_is_context_s(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path}/t.db")
    seen: list[JobContext] = []

    @app.job(transactional=True)
    def look() -> None:
        seen.append(tenure.current())

    res = Reservation("j1", "look", "billing", '{"args":[]}', Policy(), 3, 7, 0.0, "b1")

    def lease_ok() -> bool:
        return False

    def cancelled() -> bool:
        return True

    assert execute(app, res, look, lease_ok=lease_ok, cancelled=cancelled) is SUCCEEDED
    (ctx,) = seen
    assert ctx == context(app, res, look, lease_ok, cancelled)
    assert (ctx.job_id, ctx.name, ctx.queue, ctx.attempt, ctx.batch_id, ctx.token) == (
        "j1",
        "look",
        "billing",
        3,
        "b1",
        7,
    )
    assert ctx._app is app and ctx._transaction is None and ctx._transactional
    assert not ctx.lease_ok() and ctx.cancelled

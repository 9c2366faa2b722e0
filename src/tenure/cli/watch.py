"""`tenure batch watch`: a live progress bar that follows a batch until it settles.

Watching only reads the store: closing the bar (Ctrl-C, a closed terminal) stops nothing, and
watching again shows where the batch stands.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import Progress

from tenure.app import App
from tenure.cli.tables import bar_columns
from tenure.core.records import BatchRecord

POLL_S = 0.5


def watch_batch(app: App, batch_id: str, console: Console, *, poll: float = POLL_S) -> BatchRecord:
    info = app.get_batch(batch_id)
    # the name printed as stored (markup-free), cut to leave the counts room at 80 columns
    name, columns = bar_columns(console.width, info.name, info.total)
    progress = Progress(*columns, console=console)
    with progress:
        task = progress.add_task(name, total=info.total, rate="", state=info.state)
        while True:
            info = app.get_batch(batch_id)
            elapsed = max(app.now() - info.created_at, 1e-6)
            settled = info.done + info.failed + info.cancelled
            progress.update(
                task,
                total=info.total,
                completed=info.progress * info.total,
                rate=f"{settled / elapsed:,.1f} jobs/s",
                state=info.state,
            )
            if info.finished_at is not None:
                break
            time.sleep(poll)
    return info


def summary(info: BatchRecord) -> str:
    parts = [
        f"batch {info.id} {info.name!r}: {info.state}",
        f"{info.done} done, {info.failed} failed, {info.cancelled} cancelled of {info.total}",
    ]
    for kind, job_id in (
        ("then", info.then_job_id),
        ("catch", info.catch_job_id),
        ("finally", info.finally_job_id),
    ):
        if job_id:
            parts.append(f"{kind}: job {job_id}")
    return "; ".join(parts)

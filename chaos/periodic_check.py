"""kill-periodic's own check: the runs the workers' tickers dispatched for a periodic job,
read back from the store and from the job's own ledger."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tenure.periodic import run_id
from tenure.stores.base import get_job

# Attempts that end without a result (the fault schedule's doing): each explains one re-run.
CUT_SHORT = ("crashed", "interrupted", "lost_lease", "timed_out")


def due_of(name: str, job: Any) -> float | None:
    """The due time a run's id was made from: one of the seconds before it was dispatched."""
    for second in range(int(job.created_at) + 1, int(job.created_at) - 120, -1):
        if run_id(name, float(second)) == job.id:
            return float(second)
    return None


def check_periodic(store: Any, name: str, ledger: Path) -> tuple[list[str], list[str]]:
    """(problems, notes): every run belongs to one due time and no due time has two runs;
    no run failed; no run executed more often than its cut-short attempts explain; the
    stored state names a run the store holds."""
    problems: list[str] = []
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    starts = Counter(line.split()[0] for line in lines if line.strip())
    runs = [get_job(store, j.id) for j in store.list_jobs(limit=1_000_000) if j.name == name]
    if not runs:
        problems.append(f"no run of {name!r} was dispatched: the workers' tickers never claimed")
    dues: list[float] = []
    for job in runs:
        due = due_of(name, job)
        if due is None:
            problems.append(f"periodic run {job.id}: its id is no due time's (not from a claim)")
        else:
            dues.append(due)
        if job.state in ("failed", "cancelled"):
            problems.append(f"periodic run {job.id}: {job.state}: {job.last_error}")
        cut = sum(1 for a in job.attempts if a.outcome in CUT_SHORT)
        if starts[job.id] > 1 + cut:
            problems.append(
                f"periodic run {job.id}: executed {starts[job.id]} times, {cut} attempt(s) cut "
                "short: a re-run nothing explains"
            )
        if job.state == "succeeded" and starts[job.id] == 0:
            problems.append(f"periodic run {job.id}: succeeded without running")
    if len(set(dues)) != len(dues):
        problems.append("a due time was dispatched twice")
    stored = {r.name: r for r in store.list_periodic()}.get(name)
    if runs and (stored is None or stored.last_job_id not in {j.id for j in runs}):
        problems.append(f"the stored periodic state {stored} names no run in the store")
    span = int(max(dues) - min(dues)) + 1 if dues else 0
    states = dict(sorted(Counter(j.state for j in runs).items()))
    notes = [
        f"periodic: {len(runs)} runs for {span} due seconds ({span - len(set(dues))} not "
        f"dispatched: no worker ticked within 10 s of them), states {states}, "
        f"{sum(starts.values())} executions"
    ]
    return problems, notes

"""Periodic jobs whose runs would pile up: a schedule that comes due again before a run may
have ended (its timeout + kill_after), with no `overlap=` key to keep a second run waiting."""

from __future__ import annotations

from tenure.app import App
from tenure.doctor.model import Finding, JobModel
from tenure.doctor.rules import finding


def check_periodic(app: App, jobs: list[JobModel], now: float) -> list[Finding]:
    models = {m.name: m for m in jobs}
    out: list[Finding] = []
    for name, periodic in sorted(app.periodic_jobs.items()):
        job, model = app.jobs.get(name), models.get(name)
        interval = periodic.schedule.shortest_interval(now)
        if job is None or model is None or interval is None or job.guards.overlap is not None:
            continue
        longest = job.policy.timeout + job.policy.kill_after
        if interval >= longest:
            continue
        out.append(
            finding(
                "periodic-runs-pile-up",
                f"periodic job '{name}' ({periodic.schedule.expression!r}) comes due every "
                f"{interval:g} s, but a run may last {longest:g} s (timeout "
                f"{job.policy.timeout:g} s + kill_after {job.policy.kill_after:g} s): a slow "
                "run is still going when the next one starts, and runs pile up",
                "add overlap=True to its decorator (a run waits while the previous one runs), "
                f"or lower its timeout below {interval:g} s",
                model.source,
                clocks=(model.timeout, model.kill_after) if model.timeout else (model.kill_after,),
                job=name,
            )
        )
    return out

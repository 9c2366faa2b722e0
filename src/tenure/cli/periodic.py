"""`tenure periodic list`: each periodic job's schedule, next due time and latest run."""

from __future__ import annotations

import typer

from tenure.cli.common import AppOption, UrlOption, err, open_app, out, warn
from tenure.cli.tables import Column, print_table
from tenure.periodic import PeriodicStatus, zone_text

periodic_cli = typer.Typer(help="Periodic jobs (@app.periodic): list.", no_args_is_help=True)


@periodic_cli.command("list")
def periodic_list(app: AppOption = None, url: UrlOption = None) -> None:
    """Each periodic job: its schedule, next due time, latest run and that run's outcome.
    The schedules are read from your code: pass --app MODULE:ATTR."""
    the_app = open_app(app, url, missing_ok=True)
    missing = the_app.store_missing()
    if not the_app.periodic_jobs:
        warn(
            "this app defines no periodic job: the schedules live in your code "
            "(@app.periodic), so pass --app MODULE:ATTR"
        )
        return
    # the schedule's zone never split: "(Europe/Amsterdam)" is 18
    columns = [Column("name", "cut", floor=16), Column("schedule", "fold", floor=18)]
    columns += [Column("next due"), Column("last run", "fold", floor=16)]
    columns += [Column("job id", drop=1)]
    if missing is not None:  # the schedules live in the code: shown, with no run yet
        warn(f"{missing}: no run recorded yet (a worker creates the store when it starts)")
    statuses = the_app.periodic_status(read_store=missing is None)
    print_table(out, err, columns, [row(s) for s in statuses])


def row(s: PeriodicStatus) -> list[str]:
    schedule = f"{s.expression} ({s.tz})" + (", catch_up=none" if s.catch_up == "none" else "")
    next_due = zone_text(s.next_due, s.tz) if s.next_due is not None else "never"
    if s.last_job_id is None:
        last = "none yet"
    elif s.last_run_at is None:
        last = "not in the store any more"
    else:  # the run and its outcome in one column: the time whole, the outcome beneath
        last = f"{zone_text(s.last_run_at, s.tz)} {s.last_state or '-'}"
    return [s.name, schedule, next_due, last, s.last_job_id or "-"]

"""`tenure jobs ...` and `tenure failed ...`: look at jobs, and put failed ones back."""

from __future__ import annotations

from typing import Annotated

import typer

from tenure.app import App
from tenure.cli.common import (
    AppOption,
    UrlOption,
    err,
    fail,
    open_app,
    out,
    say,
    say_wrapped,
    unknown_queue,
    warn,
)
from tenure.cli.tables import Column, print_table, short
from tenure.core.errors import CancelRefused, JobNotFound
from tenure.core.states import JOB_STATES
from tenure.core.words import clock_text
from tenure.describe import chain_lines, chain_stops, describe_job, waiting_link

jobs_cli = typer.Typer(help="Look at jobs.", no_args_is_help=True)
failed_cli = typer.Typer(help="Failed jobs: list, retry, forget.", no_args_is_help=True)


ID = Column("id")  # whole: what `jobs show` takes
JOB = Column("job", "cut", floor=10)
QUEUE = Column("queue", "cut", floor=7, drop=2)


def what_else(app: App, ident: str) -> str:
    """An id that is not a job's but a chain's or a batch's (`jobs show` prints both), and
    the command that shows it."""
    if app.find_batch(ident) is not None:
        return f"; {ident} is a batch: tenure batch show {ident}"
    first = app.find_job(f"{ident}.1")  # a chain's links are CHAIN.1, CHAIN.2, ...
    if first is not None and first.chain_text:
        return f"; {ident} is a chain: tenure jobs show {ident}.1 prints it"
    return ""


@jobs_cli.command("show")
def jobs_show(job_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Show a job and every attempt: why it ran, and why it ran again."""
    the_app = open_app(app, url)
    try:
        info = the_app.get_job(job_id)
    except JobNotFound as exc:
        waiting = waiting_link(job_id, the_app.find_job)
        if waiting is None:
            fail(f"{exc}{what_else(the_app, job_id)}", code=1)
            return
        for line in waiting:
            say(line)
        return
    stops = chain_stops(info, the_app.find_job)
    for line in describe_job(info, the_app.now()) + chain_lines(info, stops):
        say_wrapped(line)
    last = info.attempts[-1] if info.attempts else None
    if last is not None and last.traceback:
        say("  traceback of the last attempt:")
        say(last.traceback.rstrip())


@jobs_cli.command("cancel")
def jobs_cancel(job_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Cancel a job. Queued or scheduled: it never runs. Running: its worker stops it within a
    heartbeat (CancelRequested inside the job, a kill after its kill_after); no try is used and it
    is not retried. A finished job is refused (exit 1)."""
    try:
        done = open_app(app, url).cancel(job_id)
    except (JobNotFound, CancelRefused) as exc:
        fail(str(exc), code=1)
        return
    say(done.message)


@jobs_cli.command("list")
def jobs_list(
    state: Annotated[str | None, typer.Option(help=", ".join(JOB_STATES))] = None,
    queue: Annotated[str | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 50,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """List jobs, newest first, and the counts per state."""
    the_app = open_app(app, url)
    columns = [ID, JOB, QUEUE, Column("state"), Column("tries", drop=3)]
    columns += [Column("dispatched", drop=1), Column("last error", "fold", floor=12)]
    rows = [
        [
            job.id,
            job.name,
            job.queue,
            job.state,
            str(job.tries_used),
            clock_text(job.created_at),
            short(job.last_error or "", 60),
        ]
        for job in the_app.list_jobs(state=state, queue=queue, limit=limit)
    ]
    print_table(out, err, columns, rows)
    if queue and not rows and unknown_queue(the_app, queue):
        warn(unknown_queue(the_app, queue))
    say(" ".join(f"{k}={v}" for k, v in the_app.counts().items()))


@failed_cli.command("list")
def failed_list(
    limit: Annotated[int, typer.Option()] = 100, app: AppOption = None, url: UrlOption = None
) -> None:
    """List failed jobs with the reason each one failed."""
    failed = open_app(app, url).failed_jobs(limit=limit)
    if not failed:
        say("no failed jobs")
        return
    columns = [ID, JOB, QUEUE, Column("failed at", drop=1), Column("reason", "fold", floor=24)]
    rows = [
        [
            job.id,
            job.name,
            job.queue,
            clock_text(job.finished_at) if job.finished_at else "",
            job.last_error or "",
        ]
        for job in failed
    ]
    print_table(out, err, columns, rows)


@failed_cli.command("retry")
def failed_retry(
    job_id: Annotated[str | None, typer.Argument()] = None,
    all_: Annotated[bool, typer.Option("--all", help="Retry every failed job.")] = False,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Put a failed job (or all of them) back in its queue with fresh tries."""
    if all_ == (job_id is not None):
        fail("give a job id or --all (not both)")
    the_app = open_app(app, url)
    ids = [job_id] if job_id else [j.id for j in the_app.failed_jobs(limit=1_000_000)]
    retried = [i for i in ids if the_app.retry_failed(i)]
    if job_id and not retried:
        fail(the_app.retry_refusal(job_id), code=1)
    say(f"retried {len(retried)} job(s)")


@failed_cli.command("forget")
def failed_forget(job_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Delete a failed (or finished) job and its attempts."""
    the_app = open_app(app, url)
    if not the_app.forget(job_id):
        try:
            state = the_app.get_job(job_id).state
        except JobNotFound as exc:  # an unknown id is not a live job
            fail(str(exc), code=1)
            return
        fail(f"job {job_id} is {state}, not finished; nothing deleted", code=1)
    say(f"forgot job {job_id}")

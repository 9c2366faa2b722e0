"""The `tenure` command: thin; it parses, calls the library, and prints."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.table import Table

from tenure.app import App
from tenure.describe import describe_job
from tenure.errors import ConfigError, JobNotFound, TenureError
from tenure.logs import setup_logging
from tenure.stores.base import clock_text

cli = typer.Typer(
    name="tenure",
    help="Background jobs that never run twice by accident.",
    no_args_is_help=True,
    add_completion=False,
)
jobs_cli = typer.Typer(help="Look at jobs.", no_args_is_help=True)
failed_cli = typer.Typer(help="Failed jobs: list, retry, forget.", no_args_is_help=True)
cli.add_typer(jobs_cli, name="jobs")
batch_cli = typer.Typer(help="Batches: watch, show, list, cancel.", no_args_is_help=True)
cli.add_typer(failed_cli, name="failed")
cli.add_typer(batch_cli, name="batch")

out = Console()
err = Console(stderr=True)

AppOption = Annotated[
    str | None,
    typer.Option("--app", help="MODULE:ATTR of your tenure.App (its store URL is used)."),
]
UrlOption = Annotated[
    str | None,
    typer.Option("--url", help="Store URL; default $TENURE_URL, else sqlite:///tenure.db."),
]


# Apps a command opened from a URL, closed when the command ends (see _clean_errors): their
# connection pools must not outlive a command run in-process (tests, fuzzing).
_opened: list[App] = []


def open_app(app_spec: str | None, url: str | None) -> App:
    if app_spec:
        from tenure.worker.loading import load_app

        return load_app(app_spec)  # the application's own App: it owns its lifetime
    app = App(url)
    _opened.append(app)
    return app


def fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


@cli.command()
def worker(
    app: Annotated[str, typer.Option("--app", help="MODULE:ATTR of your tenure.App.")],
    queues: Annotated[str, typer.Option(help="Queues in priority order, comma-separated.")] = (
        "default"
    ),
    concurrency: Annotated[int, typer.Option(help="Attempts run at once.")] = 1,
    lease: Annotated[float, typer.Option(help="Lease in seconds; renewed every lease/3.")] = 30.0,
    grace: Annotated[
        float, typer.Option(help="On SIGTERM, seconds running jobs get before being handed back.")
    ] = 8.0,
    max_jobs: Annotated[int | None, typer.Option(help="Exit after this many jobs.")] = None,
    max_time: Annotated[float | None, typer.Option(help="Exit after this many seconds.")] = None,
    memory: Annotated[
        float | None, typer.Option(help="Kill and replace a child process above this many MB.")
    ] = None,
    burst: Annotated[bool, typer.Option(help="Drain the queues, then exit.")] = False,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port (/metrics).")
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address for --metrics-port; 0.0.0.0 inside a container.")
    ] = "127.0.0.1",
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING...")] = "INFO",
) -> None:
    """Run a worker: reserve jobs, run each attempt in a child process, renew leases."""
    from tenure.worker.loading import load_app
    from tenure.worker.supervisor import Worker, WorkerOptions

    setup_logging(log_level)
    options = WorkerOptions(
        app_spec=app,
        queues=tuple(q.strip() for q in queues.split(",")),
        concurrency=concurrency,
        lease=lease,
        grace=grace,
        max_jobs=max_jobs,
        max_time=max_time,
        memory_mb=memory,
        burst=burst,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
    )
    problems = options.problems()
    if problems:
        fail("; ".join(problems))
    try:
        the_app = load_app(app)
        code = Worker(the_app, options).run()
    except ConfigError as exc:
        fail(str(exc))
    raise typer.Exit(code)


@jobs_cli.command("show")
def jobs_show(job_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Show a job and every attempt: why it ran, and why it ran again."""
    try:
        info = open_app(app, url).get_job(job_id)
    except JobNotFound as exc:
        fail(str(exc), code=1)
        return
    for line in describe_job(info):
        out.print(line, highlight=False, soft_wrap=True)
    last = info.attempts[-1] if info.attempts else None
    if last is not None and last.traceback:
        out.print("  traceback of the last attempt:", highlight=False)
        out.print(last.traceback.rstrip(), highlight=False, soft_wrap=True)


@jobs_cli.command("list")
def jobs_list(
    state: Annotated[str | None, typer.Option(help="queued, scheduled, running, ...")] = None,
    queue: Annotated[str | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 50,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """List jobs, newest first, and the counts per state."""
    the_app = open_app(app, url)
    table = Table("id", "job", "queue", "state", "tries", "dispatched", "last error")
    for job in the_app.store.list_jobs(state=state, queue=queue, limit=limit):
        table.add_row(
            job.id,
            job.name,
            job.queue,
            job.state,
            str(job.tries_used),
            clock_text(job.created_at),
            (job.last_error or "")[:60],
        )
    out.print(table)
    out.print(" ".join(f"{k}={v}" for k, v in the_app.counts().items()), highlight=False)


@failed_cli.command("list")
def failed_list(
    limit: Annotated[int, typer.Option()] = 100, app: AppOption = None, url: UrlOption = None
) -> None:
    """List failed jobs with the reason each one failed."""
    failed = open_app(app, url).failed_jobs(limit=limit)
    if not failed:
        out.print("no failed jobs")
        return
    table = Table("id", "job", "queue", "failed at", "reason")
    for job in failed:
        table.add_row(
            job.id,
            job.name,
            job.queue,
            clock_text(job.finished_at) if job.finished_at else "",
            job.last_error or "",
        )
    out.print(table)


@failed_cli.command("retry")
def failed_retry(
    job_id: Annotated[str | None, typer.Argument()] = None,
    all_: Annotated[bool, typer.Option("--all", help="Retry every failed job.")] = False,
    app: AppOption = None,
    url: UrlOption = None,
) -> None:
    """Put a failed job (or all of them) back in its queue with fresh tries."""
    the_app = open_app(app, url)
    if all_ == (job_id is not None):
        fail("give a job id or --all (not both)")
    ids = [job_id] if job_id else [j.id for j in the_app.failed_jobs(limit=1_000_000)]
    retried = [i for i in ids if the_app.retry_failed(i)]
    if job_id and not retried:
        fail(the_app.retry_refusal(job_id), code=1)
    out.print(f"retried {len(retried)} job(s)")


@failed_cli.command("forget")
def failed_forget(job_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Delete a failed (or finished) job and its attempts."""
    if not open_app(app, url).forget(job_id):
        fail(f"job {job_id} is not a finished job; nothing deleted", code=1)
    out.print(f"forgot job {job_id}")


@batch_cli.command("watch")
def batch_watch(batch_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Follow a batch with a live progress bar; closing it does not stop the work."""
    from tenure.watch import summary, watch_batch

    the_app = open_app(app, url)
    try:
        info = watch_batch(the_app, batch_id, out)
    except JobNotFound as exc:
        fail(str(exc), code=1)
        return
    except KeyboardInterrupt:
        out.print(f"stopped watching; the batch goes on (tenure batch watch {batch_id})")
        return
    out.print(summary(info), highlight=False)


@batch_cli.command("show")
def batch_show(batch_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Where a batch stands, and its callback jobs."""
    from tenure.watch import summary

    try:
        info = open_app(app, url).get_batch(batch_id)
    except JobNotFound as exc:
        fail(str(exc), code=1)
        return
    out.print(summary(info) + f"; progress {info.progress:.1%}", highlight=False)


@batch_cli.command("list")
def batch_list(
    limit: Annotated[int, typer.Option()] = 20, app: AppOption = None, url: UrlOption = None
) -> None:
    """Recent batches, newest first."""
    table = Table("id", "name", "state", "progress", "done", "failed", "total")
    for b in open_app(app, url).store.list_batches(limit=limit):
        table.add_row(
            b.id, b.name, b.state, f"{b.progress:.1%}", str(b.done), str(b.failed), str(b.total)
        )
    out.print(table)


@batch_cli.command("cancel")
def batch_cancel(batch_id: str, app: AppOption = None, url: UrlOption = None) -> None:
    """Cancel a batch: its queued jobs never start; running ones see `batch.cancelled`."""
    if not open_app(app, url).cancel_batch(batch_id):
        fail(f"batch {batch_id} is not running; nothing cancelled", code=1)
    out.print(f"cancelled batch {batch_id}")


@cli.command()
def restart(app: AppOption = None, url: UrlOption = None) -> None:
    """Ask every running worker to finish its current jobs and exit (to pick up new code)."""
    at = open_app(app, url).store.request_restart()
    out.print(f"restart requested at {clock_text(at)}: workers finish their jobs, then exit")


@cli.command()
def migrate(app: AppOption = None, url: UrlOption = None) -> None:
    """Create or upgrade the store's schema (also done automatically on first use)."""
    the_app = open_app(app, url)
    the_app.store.migrate()
    out.print(f"schema up to date in {the_app!r}")


@cli.command()
def demo(
    keep: Annotated[bool, typer.Option(help="Keep the demo database afterwards.")] = False,
) -> None:
    """The whole story on the embedded SQLite store: slow, flaky and crashing jobs."""
    from tenure.demo import run_demo

    raise typer.Exit(run_demo(out, keep=keep))


def _register_optional_commands() -> None:
    # The dashboard imports only typer at load time and names its extra when it runs.
    from tenure.web.command import register as register_dashboard

    register_dashboard(cli)
    try:
        from tenure.doctor.command import register as register_doctor
    except ModuleNotFoundError as exc:  # the 'doctor' extra (PyYAML, tree-sitter) is absent
        missing = exc.name

        @cli.command()
        def doctor() -> None:
            """Check the four clocks (needs: pip install 'tenure[doctor]')."""
            fail(
                f"tenure doctor needs the 'doctor' extra ({missing} is not installed): "
                "pip install 'tenure[doctor]'"
            )

        return
    register_doctor(cli)


_register_optional_commands()


def _clean_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A store that cannot be opened or reached (bad URL, missing directory, server down) is
    a clear message and exit 2, not a traceback; TENURE_DEBUG=1 shows the traceback."""

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.exceptions.ClickException, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("TENURE_DEBUG"):
                raise
            text = str(exc) if isinstance(exc, TenureError) else f"{type(exc).__name__}: {exc}"
            err.print(f"error: {text}", highlight=False)
            raise typer.Exit(2) from None
        finally:
            while _opened:
                with contextlib.suppress(Exception):  # closing must not hide the outcome
                    _opened.pop().close()

    return command


def _wrap_commands(app: typer.Typer) -> None:
    for info in app.registered_commands:
        if info.callback is not None:
            info.callback = _clean_errors(info.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _wrap_commands(group.typer_instance)


_wrap_commands(cli)


def main() -> None:
    cli()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

"""Commands that run or steer workers: `worker`, `restart`, `migrate`, `demo`."""

from __future__ import annotations

from typing import Annotated

import typer

from tenure.cli.common import AppOption, UrlOption, fail, open_app, out, say, warn
from tenure.errors import ConfigError
from tenure.logs import setup_logging
from tenure.stores.base import clock_text


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


def restart(app: AppOption = None, url: UrlOption = None) -> None:
    """Ask every running worker to finish its current jobs and exit (to pick up new code)."""
    the_app = open_app(app, url)
    at = the_app.request_restart()
    live = the_app.live_workers()
    if not live:
        warn(
            "no live worker is registered in this store, so none will restart; if your "
            "workers run, they use another store (check --app, --url or $TENURE_URL)"
        )
    say(
        f"restart requested at {clock_text(at)}: {len(live)} live worker(s) finish their "
        "jobs, then exit"
    )


def migrate(app: AppOption = None, url: UrlOption = None) -> None:
    """Create or upgrade the store's schema (also done automatically on first use)."""
    the_app = open_app(app, url, create=True)
    the_app.migrate()
    say(f"schema up to date in {the_app.describe_store()}")


def demo(
    keep: Annotated[bool, typer.Option(help="Keep the demo database afterwards.")] = False,
) -> None:
    """The whole story on the embedded SQLite store: slow, flaky and crashing jobs."""
    from tenure.demo import run_demo

    raise typer.Exit(run_demo(out, keep=keep))


def register(cli: typer.Typer) -> None:
    for command in (worker, restart, migrate, demo):
        cli.command()(command)

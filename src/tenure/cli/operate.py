"""Commands that run or steer workers: `worker`, `restart`, `migrate`, `demo`."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Annotated, Any, get_type_hints

import typer

from tenure.cli.common import AppOption, UrlOption, fail, open_app, out, say, warn
from tenure.core.errors import ConfigError
from tenure.core.words import clock_text
from tenure.logs import setup_logging
from tenure.settings import WorkerOptions, split_queues, worker_env_name, worker_flag


def worker_command() -> Callable[..., None]:
    """`tenure worker`, its options made from WorkerOptions' fields (flag, help, default and
    $TENURE_WORKER_* variable), so that a worker setting is declared once, in settings.py."""
    hints = get_type_hints(WorkerOptions)
    params = []
    for f in fields(WorkerOptions):
        if f.metadata.get("internal"):  # derived from another option (weights: --queues)
            continue
        kind: Any = hints[f.name]
        default: Any = f.default
        if f.name == "queues":  # a tuple in the options, "a,b" on the command line
            kind, default = str, ",".join(f.default)  # type: ignore[arg-type]
        option = typer.Option(
            worker_flag(f.name), help=f.metadata["help"], envvar=worker_env_name(f.name)
        )
        params.append(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if default is MISSING else default,
                annotation=Annotated[kind, option],
            )
        )
    log_option = typer.Option("--log-level", help="DEBUG, INFO, WARNING...")
    url_option = typing.get_args(UrlOption)[1]  # the --url every command takes
    params.append(
        inspect.Parameter(
            "url",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, url_option],
        )
    )
    params.append(
        inspect.Parameter(
            "log_level",
            inspect.Parameter.KEYWORD_ONLY,
            default="INFO",
            annotation=Annotated[str, log_option],
        )
    )

    def worker(**values: Any) -> None:
        """Run a worker: reserve jobs, run each attempt in a child process, renew leases."""
        setup_logging(values.pop("log_level"))
        url = values.pop("url")
        values["queues"] = split_queues(values["queues"])
        run_worker(WorkerOptions(**values), url)

    worker.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    worker.__annotations__ = {p.name: p.annotation for p in params}
    return worker


def run_worker(options: WorkerOptions, url: str | None = None) -> None:
    from tenure.loading import load_app
    from tenure.worker.supervisor import Worker

    problems = options.problems()
    if problems:
        fail("; ".join(problems))
    try:
        the_app = load_app(options.app_spec)
        if url:
            the_app.use_url(url, "--url")
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
    from tenure.cli.demo import run_demo

    raise typer.Exit(run_demo(out, keep=keep))


def register(cli: typer.Typer) -> None:
    cli.command("worker")(worker_command())
    for command in (restart, migrate, demo):
        cli.command()(command)

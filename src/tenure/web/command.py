"""`tenure dashboard`: registered on the main CLI by cli.py, testable on any Typer app."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Annotated

import typer

from tenure.extras import missing_extra
from tenure.settings import DASHBOARD_TOKEN_ENV

if TYPE_CHECKING:
    from tenure.app import App

TOKEN_ENV = DASHBOARD_TOKEN_ENV


def register(cli: typer.Typer) -> None:
    @cli.command("dashboard")
    def dashboard(
        app: Annotated[
            str | None,
            typer.Option("--app", help="MODULE:ATTR of your tenure.App (its store is read)."),
        ] = None,
        host: Annotated[
            str, typer.Option(help="Address to listen on; anything but loopback needs --auth.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
        auth: Annotated[
            str | None,
            typer.Option(
                "--auth",
                help=f"Token (12+ characters) every visitor must give; default ${TOKEN_ENV}.",
                show_default=False,
            ),
        ] = None,
        url: Annotated[
            str | None,
            typer.Option(
                "--url",
                help="Store URL; wins over $TENURE_URL, which wins over the App's URL.",
                show_default=False,
            ),
        ] = None,
        project: Annotated[
            str, typer.Option(help="Directory the doctor page reads (deployment files, code).")
        ] = ".",
    ) -> None:
        """Watch batches, attempt timelines, workers and failures in the browser.

        Needs the 'web' extra: pip install 'tenure[web]'.
        """
        try:
            import uvicorn

            from tenure.web import create_app
            from tenure.web.security import refusal_to_bind
        except ImportError as exc:
            typer.echo(f"error: {missing_extra('tenure dashboard', 'web', exc)}", err=True)
            raise typer.Exit(2) from None
        token = auth if auth is not None else (os.environ.get(TOKEN_ENV) or None)
        why = refusal_to_bind(host, token)
        if why is not None:
            typer.echo(f"error: {why}", err=True)
            raise typer.Exit(2)
        from tenure.app import App
        from tenure.core.errors import ConfigError
        from tenure.loading import load_app

        try:
            the_app = load_app(app) if app else App()
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if url:
            the_app.use_url(url, "--url")
        typer.echo(f"store: {the_app.describe_store()} (from {the_app.url_source})", err=True)
        why, missing = store_check(the_app)
        if why is not None:
            typer.echo(f"error: {why}", err=True)
            raise typer.Exit(2)
        if missing is not None:  # a dashboard may be opened first: said, not refused
            typer.echo(
                f"warning: {missing} yet: the dashboard creates it empty; if your jobs live "
                "elsewhere, point it at their store with --app MODULE:ATTR, --url URL or "
                "$TENURE_URL",
                err=True,
            )
        web = create_app(the_app, auth_token=token, app_spec=app, project_root=project)
        shown = f"[{host}]" if ":" in host else host
        try:
            # Bound before the URL is announced: a busy port is an error, not a false promise.
            listening = bind(host, port)
        except OSError as exc:
            typer.echo(f"error: cannot listen on {shown}:{port}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"tenure dashboard on http://{shown}:{port}/ (Ctrl+C to stop)", err=True)
        if token is not None:
            typer.echo(
                "sign in with the --auth token; the API takes Authorization: Bearer", err=True
            )
        config = uvicorn.Config(web, log_level="warning", server_header=False)
        uvicorn.Server(config).run(sockets=[listening])


def store_check(app: App) -> tuple[str | None, str | None]:
    """(why the dashboard must not start on this store, why it would start empty), checked
    before it listens: a malformed URL or a missing driver made every page a 500, and a
    SQLite file that is not there was created empty without a word."""
    from tenure.core.errors import ConfigError

    try:
        missing = app.store_missing()
    except ConfigError as exc:  # a mistyped ?option
        return str(exc), None
    return (app.store_refusal() if missing is None else None), missing


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock

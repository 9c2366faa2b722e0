"""What every command shares: the consoles, literal printing, errors, and finding the store.

Everything printed from the store (arguments, errors, tracebacks, names) is data: it goes out
with Rich markup off, so `[/]` or `list[int]` in a job's text prints as it is, never as style.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import textwrap
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from tenure.app import DEFAULT_URL, App
from tenure.core.errors import TenureError
from tenure.settings import DEBUG_ENV, URL_ENV

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

AppOption = Annotated[
    str | None,
    typer.Option("--app", help="MODULE:ATTR of your tenure.App (its store URL is used)."),
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help=f"Store URL; wins over ${URL_ENV}, which wins over the App's URL, else {DEFAULT_URL}.",
    ),
]


def store_options_pass_down(group: typer.Typer) -> None:
    """Let a command group take --app and --url before its subcommand, as people type them
    (`tenure jobs --url X list`, not only `tenure jobs list --url X`): every subcommand of
    these groups takes both, and "No such option: --url" sent the user looking for where it
    goes. Given on both, the subcommand's own wins; the store line on stderr says "--url"
    either way."""

    @group.callback()
    def pass_down(ctx: typer.Context, app: AppOption = None, url: UrlOption = None) -> None:
        given = {name: value for name, value in (("app", app), ("url", url)) if value}
        if given and ctx.invoked_subcommand:
            # a subcommand's context reads its option defaults from its parent's default_map
            ctx.default_map = {ctx.invoked_subcommand: given}


# Apps a command opened from a URL, closed when the command ends (see clean_errors): their
# connection pools must not outlive a command run in-process (tests, fuzzing).
_opened: list[App] = []


def say(text: str, *, style: str | None = None) -> None:
    """Print one piece of text exactly as it is."""
    out.print(Text(text, style=style or ""), soft_wrap=True)


def say_wrapped(text: str) -> None:
    """One line of a description. On a terminal narrower than it, wrapped at word boundaries
    under its own indent (the terminal would cut words and lose the indent); piped, as it
    is, so a script or grep sees one line per fact."""
    if not out.is_terminal or len(text) <= out.width:
        say(text)
        return
    body = text.lstrip(" ")
    indent = " " * (len(text) - len(body))
    wrapped = textwrap.fill(
        body,
        out.width,
        initial_indent=indent,
        subsequent_indent=indent + "    ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    say(wrapped)


def warn(text: str) -> None:
    err.print(Text.assemble(("warning: ", "yellow"), text), soft_wrap=True)


def unknown_queue(app: App, name: str) -> str:
    """ "" for a queue the store has seen; else what it has: a mistyped --queue otherwise
    reads as an empty queue."""
    known = sorted(w.queue for w in app.queue_waits())
    if name in known:
        return ""
    return f"this store has no queue {name!r} (its queues: {', '.join(known) or 'none yet'})"


def fail(message: str, code: int = 2) -> None:
    err.print(Text.assemble(("error: ", "red"), message), soft_wrap=True)
    raise typer.Exit(code)


def open_app(
    app_spec: str | None, url: str | None, *, create: bool = False, missing_ok: bool = False
) -> App:
    """The App a command works on, named on stderr with where its store came from.

    A command that does not `create` refuses a store that is not there: reading a SQLite
    file that does not exist would create an empty one and report "nothing found", while the
    jobs the user means live elsewhere."""
    if app_spec:
        from tenure.loading import load_app

        app = load_app(app_spec)  # the application's own App: it owns its lifetime
    else:
        app = App()
        _opened.append(app)
    if url:
        app.use_url(url, "--url")
    say_store(app, app_spec)
    missing = None if create or missing_ok else app.store_missing()
    if missing is not None:
        fail(
            f"{missing}; nothing was created. Point the command at your store with --app "
            f"MODULE:ATTR, --url URL, or ${URL_ENV} (set it once for every command)"
        )
    return app


def say_store(app: App, app_spec: str | None = None) -> None:
    """Name the store on stderr and which setting chose it (--url > $TENURE_URL > the App's
    URL > ./tenure.db), so that two commands that disagree show why."""
    source = app.url_source
    if app_spec and source == "the App's URL":
        source = f"the URL of --app {app_spec}"
    err.print(Text(f"store: {app.describe_store()} (from {source})", style="dim"), soft_wrap=True)


def clean_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A store that cannot be opened or reached (bad URL, missing directory, server down) is
    a clear message and exit 2, not a traceback; $TENURE_DEBUG=1 shows the traceback."""

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # the reader left early (`| head`): not the command's error. End as Rich does for
            # its own writes, exit 1 and nothing said, with stdout pointed at /dev/null so
            # the interpreter's last flush does not raise it again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1) from None
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            text = str(exc) if isinstance(exc, TenureError) else f"{type(exc).__name__}: {exc}"
            err.print(Text(f"error: {text}"), soft_wrap=True)
            raise typer.Exit(2) from None
        finally:
            while _opened:
                with contextlib.suppress(Exception):  # closing must not hide the outcome
                    _opened.pop().close()

    return command


def wrap_commands(app: typer.Typer) -> None:
    for info in app.registered_commands:
        if info.callback is not None:
            info.callback = clean_errors(info.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            wrap_commands(group.typer_instance)

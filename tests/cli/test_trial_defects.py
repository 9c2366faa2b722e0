"""What the day-two trial (a fresh clone, a plain install, 80 columns) found a newcomer
typing by accident: output piped into `head`, an id that is a chain's or a batch's, an id
that does not exist given to `failed forget`, a file path given to --app, and help text that
named the store's sources in the wrong order. Each ran in a process of its own, as typed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from cli import helpers
from cli.helpers import SRC
from tenure.testing import drain

JOBS = """
import tenure

app = tenure.App()

@app.job
def fetch(n: int) -> int:
    return n
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "jobs.py").write_text(JOBS)
    return tmp_path


def url_of(project: Path) -> str:
    return f"sqlite:///{project / 'tenure.db'}"


@pytest.mark.parametrize(
    "args", [("doctor", "--rules"), ("--help",), ("jobs", "list"), ("batch", "list")]
)
def test_output_piped_into_a_closed_reader_ends_quietly(
    project: Path, args: tuple[str, ...]
) -> None:
    """`tenure doctor --rules | head -1` printed "error: BrokenPipeError: [Errno 32] Broken
    pipe" and exited 2: the reader leaving early is not an error of the command."""
    app = tenure.App(url_of(project))
    app.job(name="fetch")(lambda n: n).dispatch(1)  # a store, and a row to print
    app.batch([app.jobs["fetch"].sig(2)])
    app.close()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write meets EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tenure", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=project,
            env={
                "PYTHONPATH": f"{SRC}{os.pathsep}{project}",
                "COLUMNS": "80",
                "PATH": os.environ["PATH"],
                "TENURE_URL": url_of(project),
            },
        )
    finally:
        os.close(write)
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "error" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # as Rich's own tables end: 1, no message


def test_failed_forget_of_an_unknown_id_says_there_is_no_such_job(project: Path) -> None:
    """It said "job nosuch is not a finished job; nothing deleted", as though it existed."""
    app = tenure.App(url_of(project))
    app.job(name="fetch")(lambda n: n)
    queued = app.jobs["fetch"].dispatch(1).id
    app.close()
    env = {"TENURE_URL": url_of(project)}
    missing = helpers.run_cli("failed", "forget", "nosuch", cwd=project, env=env)
    assert missing.returncode == 1
    assert "error: no job with id 'nosuch' in sqlite:///" in missing.stderr, missing.stderr
    live = helpers.run_cli("failed", "forget", queued, cwd=project, env=env)
    assert live.returncode == 1
    assert f"job {queued} is queued, not finished; nothing deleted" in live.stderr, live.stderr


def test_jobs_show_of_a_chain_or_batch_id_points_at_what_to_run(project: Path) -> None:
    """`jobs show` prints "chain ID: link 2 of 2"; `tenure jobs show ID` of that chain id
    then said only "no job with id": the id is real, it is a chain's (or a batch's)."""
    app = tenure.App(url_of(project))
    fetch = app.job(name="fetch")(lambda n: n)
    chain = app.chain([fetch.sig(1), fetch.sig(2)])
    batch = app.batch([fetch.sig(3)])
    app.close()
    env = {"TENURE_URL": url_of(project)}
    shown = helpers.run_cli("jobs", "show", chain.id, cwd=project, env=env)
    assert shown.returncode == 1
    assert f"{chain.id} is a chain: tenure jobs show {chain.id}.1" in shown.stderr, shown.stderr
    shown = helpers.run_cli("jobs", "show", batch.id, cwd=project, env=env)
    assert shown.returncode == 1
    assert f"{batch.id} is a batch: tenure batch show {batch.id}" in shown.stderr, shown.stderr
    nothing = helpers.run_cli("jobs", "show", "nosuch", cwd=project, env=env)
    assert nothing.returncode == 1 and " is a " not in nothing.stderr


def test_a_file_path_given_to_app_names_the_module_to_give(project: Path) -> None:
    """`--app shop/jobs.py:app` said "No module named 'shop/jobs'"."""
    done = helpers.run_cli("jobs", "list", "--app", "shop/jobs.py:app", cwd=project)
    assert done.returncode == 2
    assert "a dotted module name, not a file path: try --app shop.jobs:app" in done.stderr, (
        done.stderr
    )


def test_the_help_names_the_store_sources_in_the_order_that_wins(project: Path) -> None:
    """`tenure --help` said "the store of --app, or --url, or $TENURE_URL", while --url wins
    over $TENURE_URL, which wins over the App's URL (every option's help and the README)."""
    shown = helpers.run_cli("--help", cwd=project, columns=80)
    text = " ".join(shown.stdout.split())
    assert "--url URL, else $TENURE_URL" in text, text
    assert "else the URL of the App that --app MODULE:ATTR names, else ./tenure.db" in text
    assert "queue Pause, resume or purge a queue" in text, text


def test_a_mistyped_queue_is_named_not_shown_as_empty(project: Path) -> None:
    """`jobs list --queue mial` printed an empty table and `queue purge mial` said the queue
    "holds no waiting job": both as though the queue existed."""
    app = tenure.App(url_of(project))
    app.job(name="fetch")(lambda n: n).options(queue="mail").dispatch(1)
    app.close()
    env = {"TENURE_URL": url_of(project)}
    listed = helpers.run_cli("jobs", "list", "--queue", "mial", cwd=project, env=env)
    assert listed.returncode == 0
    assert "this store has no queue 'mial' (its queues: mail)" in listed.stderr, listed.stderr
    purged = helpers.run_cli("queue", "purge", "mial", "--yes", cwd=project, env=env)
    assert purged.returncode == 0
    assert "this store has no queue 'mial' (its queues: mail); nothing cancelled" in (purged.stdout)
    real = helpers.run_cli(
        "jobs", "list", "--queue", "mail", "--state", "failed", cwd=project, env=env
    )
    assert "has no queue" not in real.stderr  # a known queue with no match is just empty


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlit:///x.db", "store URL: expected sqlite:///PATH"),
        ("redis://127.0.0.1:6379/0?prefx=a", "unknown option 'prefx'"),
    ],
)
def test_the_dashboard_refuses_a_store_it_cannot_read(project: Path, url: str, said: str) -> None:
    """It announced itself on a malformed URL or option, and every page was then a 500."""
    done = helpers.run_cli("dashboard", "--url", url, "--port", "0", cwd=project)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr, done.stderr
    assert "tenure dashboard on" not in done.stderr


def test_the_dashboard_says_when_it_would_create_the_store(project: Path) -> None:
    """A mistyped SQLite path was created empty without a word, and the dashboard showed
    "no worker is running" while the jobs lived elsewhere. It may be opened before any job
    exists, so it says so and goes on."""
    busy = socket.socket()  # a port it cannot take: it stops there, after the warning
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = str(busy.getsockname()[1])
    try:
        done = helpers.run_cli(
            "dashboard", "--url", "sqlite:///mising.db", "--port", port, cwd=project
        )
    finally:
        busy.close()
    assert "warning: no SQLite store at " in done.stderr, done.stderr
    assert "the dashboard creates it empty; if your jobs live elsewhere" in done.stderr
    assert done.returncode == 2 and "cannot listen on" in done.stderr


def on_a_terminal(args: list[str], cwd: Path, env: dict[str, str], columns: int) -> str:
    """What `python -m tenure ARGS` shows on a terminal `columns` wide (a pseudo-terminal),
    its escape sequences removed."""
    import fcntl
    import pty
    import re
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, on the terminal
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, "-m", "tenure", *args], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal: it ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    os.close(fd)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)


@pytest.mark.parametrize("columns", [80, 120])
def test_jobs_show_wraps_at_word_boundaries_on_a_narrow_terminal(
    project: Path, columns: int
) -> None:
    """At 80 columns an attempt's line (worker, pid, host, the error) ran to 200 characters
    and the terminal cut it mid-word, losing the indent that says which attempt it is."""
    app = tenure.App(url_of(project))
    long_error = "the partner API at https://partner.example/v1/orders answered " + "503 " * 30

    def fetch(n: int) -> None:
        raise RuntimeError(long_error)

    handle = app.job(name="fetch", tries=1)(fetch).dispatch(1)
    drain(app)
    assert app.get_job(handle.id).state == "failed"
    app.close()
    env = {
        "PYTHONPATH": f"{SRC}{os.pathsep}{project}",
        "PATH": os.environ["PATH"],
        "TENURE_URL": url_of(project),
        "TERM": "xterm",
    }
    shown = on_a_terminal(["jobs", "show", handle.id], project, env, columns)
    described = shown.split("  traceback of the last attempt:")[0]  # verbatim, as Python's
    # the store's line (stderr) is a URL, one word: the test's path is long
    lines = [line.rstrip() for line in described.splitlines() if not line.startswith("store:")]
    assert max(len(line) for line in lines) <= columns, shown
    attempt = next(i for i, line in enumerate(lines) if line.startswith("  attempt 1 failed"))
    assert lines[attempt + 1].startswith("      "), shown  # its continuation, under its indent
    assert "https://partner.example/v1/orders" in shown  # a word is never cut


def test_batch_show_wraps_its_summary_on_a_narrow_terminal(project: Path) -> None:
    """Its one summary line ran to 107 characters at 80 columns, cut by the terminal."""
    app = tenure.App(url_of(project))
    fetch = app.job(name="fetch")(lambda n: n)
    batch = app.batch([fetch.sig(1)], name="the nightly export of every order of every shop")
    app.close()
    env = {
        "PYTHONPATH": f"{SRC}{os.pathsep}{project}",
        "PATH": os.environ["PATH"],
        "TENURE_URL": url_of(project),
        "TERM": "xterm",
    }
    shown = on_a_terminal(["batch", "show", batch.id], project, env, 80)
    lines = [line.rstrip() for line in shown.splitlines() if not line.startswith("store:")]
    assert max(len(line) for line in lines) <= 80, shown
    assert "'the nightly export of every order of every shop'" in " ".join(lines)

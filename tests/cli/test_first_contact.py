"""What a newcomer meets first: the CLI as users run it, in a process of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import pytest

import tenure
from cli import helpers
from cli.helpers import SRC
from tenure.core.words import clock_text
from tenure.extras import install_line
from tenure.testing import drain

# A job argument, error and traceback that Rich would read as markup if given the chance.
TRICKY = "[/] list[int] [bold]x[/bold]"

JOBS = """
import tenure

app = tenure.App()

@app.job(tries=1)
def explode(text: str) -> None:
    rows = {"a": 1}
    idx = "[/]"
    rows[idx]  # KeyError: '[/]' -- its traceback line holds rows[idx]

@app.job
def echo(text: str) -> dict[str, str]:
    return {"echo": text}
"""


run_cli = partial(helpers.run_cli, columns=80)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shopjobs.py").write_text(JOBS)
    return tmp_path


def failed_store(project: Path) -> tuple[str, str]:
    """A store with one failed job whose argument, error and traceback look like markup."""
    url = f"sqlite:///{project / 'shop.db'}"
    app = tenure.App(url)
    sys.path.insert(0, str(project))
    try:
        import shopjobs

        shopjobs.app.url = url
        handle = shopjobs.explode.dispatch(TRICKY)
        drain(shopjobs.app)
        shopjobs.app.close()
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("shopjobs", None)
    assert app.get_job(handle.id).state == "failed"
    app.close()
    return url, handle.id


def test_stored_text_is_printed_literally_and_ids_whole(project: Path) -> None:
    url, job_id = failed_store(project)
    listed = run_cli("failed", "list", "--url", url, cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert job_id in listed.stdout  # whole, at 80 columns
    assert "'[/]'" in listed.stdout.replace("\n", "")
    jobs = run_cli("jobs", "list", "--url", url, cwd=project)
    assert jobs.returncode == 0, jobs.stderr
    assert job_id in jobs.stdout
    shown = run_cli("jobs", "show", job_id, "--url", url, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert repr(TRICKY) in shown.stdout  # the argument, list[int] and [bold] included
    assert "rows[idx]" in shown.stdout  # the traceback line, brackets kept
    assert "KeyError: '[/]'" in shown.stdout


def test_a_result_is_shown_as_stored_text_literally(project: Path) -> None:
    url = f"sqlite:///{project / 'shop.db'}"
    sys.path.insert(0, str(project))
    try:
        import shopjobs

        shopjobs.app.url = url
        handle = shopjobs.echo.dispatch(TRICKY)
        drain(shopjobs.app)
        shopjobs.app.close()
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("shopjobs", None)
    shown = run_cli("jobs", "show", handle.id, "--url", url, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert f'  result: {{"echo":"{TRICKY}"}}' in shown.stdout  # markup-like text kept


def test_jobs_list_at_80_columns_keeps_headers_and_states_whole(project: Path) -> None:
    """With every error empty, the last column still holds its header: "last error", not
    "las" over "t e" over "rro"."""
    url = f"sqlite:///{project / 'shop.db'}"
    sys.path.insert(0, str(project))
    try:
        import shopjobs

        shopjobs.app.url = url
        handle = shopjobs.echo.dispatch("x")
        drain(shopjobs.app)
        shopjobs.app.close()
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("shopjobs", None)
    listed = run_cli("jobs", "list", "--url", url, cwd=project)
    assert listed.returncode == 0, listed.stderr
    header, _rule, row = [line for line in listed.stdout.splitlines() if line.strip()][:3]
    assert "last error" in header and "dispatched" in header, listed.stdout
    assert handle.id in row and "succeeded" in row, listed.stdout
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80


def test_read_only_commands_never_create_a_store(project: Path) -> None:
    for args in (["failed", "list"], ["jobs", "list"], ["restart"], ["jobs", "show", "x"]):
        result = run_cli(*args, cwd=project)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "no SQLite store at" in result.stderr
        assert "$TENURE_URL" in result.stderr
        assert "store: sqlite:///tenure.db (from the default" in result.stderr
    assert not (project / "tenure.db").exists()


def test_every_command_names_its_store_with_the_password_masked(project: Path) -> None:
    url, _ = failed_store(project)
    by_env = run_cli("jobs", "list", cwd=project, env={"TENURE_URL": url})
    assert f"store: {url} (from $TENURE_URL)" in by_env.stderr
    by_app = run_cli("failed", "list", "--app", "shopjobs:app", cwd=project)
    assert "store: sqlite:///tenure.db (from the default ./tenure.db" in by_app.stderr
    secret = run_cli("jobs", "list", "--url", "redis://user:hunter2@127.0.0.1:1/0", cwd=project)
    assert "redis://user:***@127.0.0.1:1/0" in secret.stderr
    assert "hunter2" not in secret.stdout + secret.stderr


def test_restart_with_no_live_worker_is_a_warning(project: Path) -> None:
    url, _ = failed_store(project)
    result = run_cli("restart", "--url", url, cwd=project)
    assert result.returncode == 0, result.stderr
    assert "warning: no live worker" in result.stderr
    assert "0 live worker(s)" in result.stdout


def test_bad_inputs_get_clear_errors(project: Path) -> None:
    url, _ = failed_store(project)
    bogus = run_cli("jobs", "list", "--state", "bogus", "--url", url, cwd=project)
    assert bogus.returncode == 2
    assert "state: expected one of queued, scheduled" in bogus.stderr
    assert "got 'bogus'" in bogus.stderr
    nosuch = run_cli("batch", "cancel", "nosuch", "--url", url, cwd=project)
    assert nosuch.returncode == 1
    assert "no batch with id 'nosuch'" in nosuch.stderr
    migrated = run_cli("migrate", "--url", url, cwd=project)
    assert migrated.returncode == 0
    assert migrated.stdout.strip() == f"schema up to date in {url}"


def test_version_and_help_name_the_extras(project: Path) -> None:
    version = run_cli("--version", cwd=project)
    assert version.returncode == 0
    assert version.stdout.strip() == f"tenure {tenure.__version__}"
    for command, extra in (("doctor", "doctor"), ("dashboard", "web")):
        shown = run_cli(command, "--help", cwd=project)
        assert shown.returncode == 0, shown.stderr
        assert f"pip install 'tenure[{extra}]'" in " ".join(shown.stdout.split())


def test_dashboard_on_a_busy_port_fails_before_announcing_it(project: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        result = run_cli("dashboard", "--app", "shopjobs:app", "--port", str(port), cwd=project)
    finally:
        busy.close()
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "tenure dashboard on" not in result.stderr


def test_times_of_another_day_carry_their_date() -> None:
    noon = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC
    assert clock_text(noon, today=noon + 60) == "14:13:20 UTC"
    assert clock_text(noon, today=noon + 86_400) == "2026-09-21 14:13:20 UTC"


BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = {"yaml", "tree_sitter", "tree_sitter_php", "starlette", "jinja2", "uvicorn",
               "psycopg", "psycopg_pool", "redis", "cryptography", "click"}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Block())
    sys.argv = ["tenure", *sys.argv[1:]]
    from tenure.cli import main
    main()
    """
)


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (["--help"], 0, "Commands:"),
        (["--version"], 0, "tenure "),
        (["doctor", "--help"], 0, "pip install 'tenure[doctor]'"),
        # the line that adds an extra to *this* install (from a clone: its directory)
        (["doctor", "."], 2, f"(PyYAML is not installed): {install_line('doctor')}"),
        (["dashboard", "--app", "shopjobs:app"], 2, install_line("web")),
        (["jobs", "list", "--url", "postgresql://127.0.0.1/x"], 2, install_line("postgres")),
        (["jobs", "list", "--url", "redis://127.0.0.1/0"], 2, install_line("redis")),
    ],
)
def test_the_base_install_runs_every_command(
    project: Path, args: list[str], code: int, expected: str
) -> None:
    """With every optional package unimportable, as after a plain `pip install tenure`."""
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project,
        env={"PYTHONPATH": f"{SRC}{os.pathsep}{project}", "PATH": os.environ["PATH"]},
    )
    assert result.returncode == code, (result.stdout, result.stderr)
    assert expected in " ".join((result.stdout + result.stderr).split())
    assert "Traceback" not in result.stderr

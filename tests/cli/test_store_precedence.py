"""One precedence for the store, in every command, worker and dashboard: --url, then
$TENURE_URL, then the App's URL, then ./tenure.db; the winner is named on stderr."""

from __future__ import annotations

import socket
from functools import partial
from pathlib import Path

import pytest

import tenure
from cli import helpers
from tenure.settings import URL_ENV

JOBS = """
import tenure

app = tenure.App("sqlite:///{app_db}")


@app.job
def hello(n):
    return n * 2
"""


run_cli = partial(helpers.run_cli, columns=80)


IDS: dict[str, str] = {}


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    """Three stores, one per source, each holding one job (its id in IDS)."""
    urls = {name: f"sqlite:///{tmp_path / (name + '.db')}" for name in ("app", "env", "flag")}
    (tmp_path / "precjobs.py").write_text(JOBS.format(app_db=tmp_path / "app.db"))
    for name, url in urls.items():
        app = tenure.App()
        app.use_url(url, "this test")
        IDS[name] = app.job(name="hello")(lambda n: n * 2).dispatch(len(name)).id
        app.close()
    return urls


def test_the_env_wins_over_the_apps_url_and_says_so(
    stores: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, stores["env"])
    app = tenure.App(stores["app"])
    assert app.url == stores["env"]
    assert app.url_source == "$TENURE_URL, which wins over the App's URL"
    monkeypatch.delenv(URL_ENV)
    assert tenure.App(stores["app"]).url_source == "the App's URL"
    assert tenure.App().url == "sqlite:///tenure.db"
    assert tenure.App().url_source.startswith("the default ./tenure.db")


def test_every_command_takes_url_then_env_then_the_apps_url(
    stores: dict[str, str], tmp_path: Path
) -> None:
    app_only = run_cli("jobs", "list", "--app", "precjobs:app", cwd=tmp_path, env={})
    assert app_only.returncode == 0, app_only.stderr
    assert f"store: {stores['app']} (from the URL of --app precjobs:app)" in app_only.stderr
    by_env = run_cli(
        "jobs", "list", "--app", "precjobs:app", cwd=tmp_path, env={URL_ENV: stores["env"]}
    )
    assert by_env.returncode == 0, by_env.stderr
    assert f"store: {stores['env']} (from $TENURE_URL, which wins" in by_env.stderr
    assert IDS["env"] in by_env.stdout and IDS["app"] not in by_env.stdout
    by_flag = run_cli(
        "jobs",
        "list",
        "--app",
        "precjobs:app",
        "--url",
        stores["flag"],
        cwd=tmp_path,
        env={URL_ENV: stores["env"]},
    )
    assert by_flag.returncode == 0, by_flag.stderr
    assert f"store: {stores['flag']} (from --url)" in by_flag.stderr
    assert IDS["flag"] in by_flag.stdout and IDS["env"] not in by_flag.stdout


def test_the_worker_and_its_children_use_the_winning_store(
    stores: dict[str, str], tmp_path: Path
) -> None:
    burst = ("worker", "--app", "precjobs:app", "--burst")
    by_env = run_cli(*burst, cwd=tmp_path, env={URL_ENV: stores["env"]})
    assert by_env.returncode == 0, by_env.stderr
    # the worker's first log line names the store and the setting that chose it
    assert f"using the store {stores['env']}" in by_env.stderr
    assert "(from $TENURE_URL, which wins over the App's URL)" in by_env.stderr
    by_flag = run_cli(*burst, "--url", stores["flag"], cwd=tmp_path, env={URL_ENV: stores["env"]})
    assert by_flag.returncode == 0, by_flag.stderr
    assert f"using the store {stores['flag']}" in by_flag.stderr
    assert "(from --url)" in by_flag.stderr
    for name, state in (("app", "queued"), ("env", "succeeded"), ("flag", "succeeded")):
        app = tenure.App()
        app.use_url(stores[name], "this test")
        (job,) = app.list_jobs()
        assert job.state == state, (name, job)  # the child recorded where the worker read
        app.close()


def test_the_dashboard_takes_url_and_names_its_store(
    stores: dict[str, str], tmp_path: Path
) -> None:
    pytest.importorskip("uvicorn")
    with socket.socket() as busy:  # a busy port: the command stops after naming the store
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = run_cli("dashboard", "--url", stores["flag"], "--port", port, cwd=tmp_path, env={})
    assert result.returncode == 2, result.stderr
    assert f"store: {stores['flag']} (from --url)" in result.stderr


@pytest.mark.parametrize(
    "command",
    [("jobs", "list"), ("failed", "list"), ("batch", "list"), ("periodic", "list")],
    ids=" ".join,
)
def test_a_groups_store_options_may_come_before_its_subcommand(
    stores: dict[str, str], tmp_path: Path, command: tuple[str, str]
) -> None:
    """`tenure jobs --url X list` is read as `tenure jobs list --url X` (it said "No such
    option: --url"), in every group whose subcommands all take --app and --url."""
    group, sub = command
    before = run_cli(group, "--url", stores["flag"], sub, cwd=tmp_path, env={})
    assert before.returncode == 0, before.stderr
    assert f"store: {stores['flag']} (from --url)" in before.stderr
    with_app = run_cli(group, "--app", "precjobs:app", sub, cwd=tmp_path, env={})
    assert with_app.returncode == 0, with_app.stderr
    assert f"store: {stores['app']} (from the URL of --app precjobs:app)" in with_app.stderr


def test_the_subcommands_own_url_wins_over_the_groups(
    stores: dict[str, str], tmp_path: Path
) -> None:
    both = run_cli(
        "jobs", "--url", stores["env"], "list", "--url", stores["flag"], cwd=tmp_path, env={}
    )
    assert both.returncode == 0, both.stderr
    assert f"store: {stores['flag']} (from --url)" in both.stderr
    assert IDS["flag"] in both.stdout and IDS["env"] not in both.stdout
    listed = run_cli("jobs", "--url", stores["env"], "list", cwd=tmp_path, env={})
    assert IDS["env"] in listed.stdout and IDS["flag"] not in listed.stdout


def test_a_group_given_options_but_no_subcommand_says_a_command_is_missing(
    stores: dict[str, str], tmp_path: Path
) -> None:
    result = run_cli("jobs", "--url", stores["flag"], cwd=tmp_path, env={})
    assert result.returncode == 2
    assert "Missing command" in result.stderr and "No such option" not in result.stderr

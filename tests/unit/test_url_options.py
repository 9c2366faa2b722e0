"""A store URL with an option its store does not take is refused before anything connects:
a ConfigError naming the option and the accepted ones, on every store; exit 2 from the CLI
and the worker (it was a raw TypeError retried forever as "store unavailable" on Redis)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from tenure.core.errors import ConfigError
from tenure.stores import open_store, url_options

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("url", "wrong", "one_accepted"),
    [
        ("redis://127.0.0.1:6379/0?prefx=jobs", "prefx", "prefix"),
        ("rediss://127.0.0.1:6379/0?ssl_cert_req=none", "ssl_cert_req", "ssl_cert_reqs"),
        ("redis+sentinel://127.0.0.1:26379/m/0?prefix=a&wait_replica=1", "wait_replica", "prefix"),
        ("redis+cluster://127.0.0.1:7000/0?prefx=a", "prefx", "prefix"),
        ("postgresql://postgres@127.0.0.1/postgres?schema=a&sslmod=require", "sslmod", "sslmode"),
        ("postgres://postgres@127.0.0.1/postgres?pooler=transaction&schem=a", "schem", "schema"),
    ],
)
def test_an_unknown_option_is_named_with_the_accepted_ones(
    url: str, wrong: str, one_accepted: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    message = str(caught.value)
    assert f"unknown option {wrong!r}" in message
    assert one_accepted in message.split("accepted ones are ", 1)[1].split(", ")


def test_a_sqlite_url_takes_no_options(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}?mode=ro"
    with pytest.raises(ConfigError, match=r"takes no \?options .* got \?mode=ro"):
        open_store(url)
    assert list(tmp_path.iterdir()) == []  # no file named "jobs.db?mode=ro" was made


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0?prefix=t_opts&socket_timeout=5&health_check_interval=10",
        "rediss://h:6380/0?ssl_cert_reqs=none&ssl_ca_certs=/x.pem&prefix=a",
        "redis+sentinel://h:26379/m/0?prefix=a&wait_replicas=1",
        "postgresql://u@h/db?schema=a&sslmode=require&connect_timeout=3&application_name=x",
    ],
)
def test_the_documented_options_pass(url: str) -> None:
    url_options.check(url)  # no error


def test_app_use_of_a_mistyped_redis_url_is_a_config_error() -> None:
    app = tenure.App("redis://127.0.0.1:6379/0?prefx=1")
    with pytest.raises(ConfigError, match="unknown option 'prefx'"):
        app.counts()
    app.close()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{SRC}{os.pathsep}{cwd}", "PATH": os.environ["PATH"]}
    return subprocess.run(
        [sys.executable, "-m", "tenure", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def test_the_cli_and_the_worker_exit_2_naming_the_option(tmp_path: Path) -> None:
    (tmp_path / "optjobs.py").write_text("import tenure\napp = tenure.App()\n")
    bad = "redis://127.0.0.1:6379/0?prefx=1"
    for args in (["jobs", "list", "--url", bad], ["worker", "--app", "optjobs:app", "--url", bad]):
        result = run(*args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert "unknown option 'prefx'" in result.stderr, args
        assert "prefix, wait_replicas" in result.stderr, args
        assert "TypeError" not in result.stderr and "Traceback" not in result.stderr

"""One place for every setting: defaults, environment variables, and "expected X, got Y"."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from tenure.core.errors import ConfigError
from tenure.settings import WorkerOptions, worker_env_name

SRC = Path(__file__).resolve().parents[2] / "src"


def test_worker_options_come_from_the_environment_and_keywords_win() -> None:
    env = {
        "TENURE_WORKER_QUEUES": "mail, default",
        "TENURE_WORKER_CONCURRENCY": "4",
        "TENURE_WORKER_MEMORY": "512",
        "TENURE_WORKER_BURST": "true",
    }
    options = WorkerOptions.from_env("shop.jobs:app", env, concurrency=2)
    assert options.queues == ("mail", "default")
    assert options.concurrency == 2  # given here: wins over the variable
    assert options.memory_mb == 512.0
    assert options.burst is True
    assert options.lease == 30.0  # untouched: the default
    assert worker_env_name("memory_mb") == "TENURE_WORKER_MEMORY"


def test_a_bad_worker_setting_says_what_was_expected() -> None:
    with pytest.raises(ConfigError, match=r"\$TENURE_WORKER_CONCURRENCY: expected int, got 'x'"):
        WorkerOptions.from_env("a:b", {"TENURE_WORKER_CONCURRENCY": "x"})
    with pytest.raises(ConfigError, match="--concurrency: expected >= 1, got 0"):
        WorkerOptions("a:b", concurrency=0).validate()


def test_the_worker_command_is_built_from_the_options(tmp_path: Path) -> None:
    """Every field is a flag with its default and variable, and the variable takes effect."""
    shown = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--help"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "COLUMNS": "200"},
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    for flag, variable in (
        ("--concurrency", "TENURE_WORKER_CONCURRENCY"),
        ("--memory", "TENURE_WORKER_MEMORY"),
        ("--max-jobs", "TENURE_WORKER_MAX_JOBS"),
    ):
        assert flag in shown.stdout and variable in shown.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "x:app"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "TENURE_WORKER_CONCURRENCY": "0"},
        timeout=60,
        cwd=tmp_path,
    )
    assert bad.returncode == 2
    assert "--concurrency: expected >= 1, got 0" in bad.stderr


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("high", "priority: expected an int (lower runs first), got 'high'"),
        (1.5, "priority: expected an int (lower runs first), got 1.5"),
        (True, "priority: expected an int (lower runs first), got True"),
        (10**12, "priority: expected an int from -1,000,000 to 1,000,000, got 1,000,000,000,000"),
    ],
)
def test_priority_is_validated_where_it_is_given(given: object, words: str) -> None:
    app = tenure.App("sqlite:///unused.db")
    with pytest.raises(tenure.ConfigError, match=re.escape(words)):
        app.job(priority=given)(lambda: None)

    @app.job
    def plain() -> None: ...

    with pytest.raises(tenure.ConfigError, match=re.escape(words)):
        plain.options(priority=given)  # type: ignore[arg-type]

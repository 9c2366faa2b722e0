"""The framework examples' own test suites (examples/*/tests), run from the root test run.

Each example is its own project with its own pytest.ini (the `tenure_app` option points the
plugin's fixture at its app), so each runs in a pytest of its own, with the example as its
working directory; every example test runs once per store: SQLite here always, PostgreSQL on
the server the conformance suite uses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FRAMEWORKS = ["fastapi_export", "django_export", "flask_export"]
# what each example's suite must at least run per store (its test functions)
MINIMUM = {"fastapi_export": 5, "django_export": 6, "flask_export": 5}


def run_example(name: str, store: str, extra_env: dict[str, str] | None = None) -> str:
    framework = name.split("_")[0]
    try:
        __import__(framework)
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {framework} is not installed (the dev extras pin it)")
        pytest.skip(f"{framework} is not installed (pip install -e '.[dev]')")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", store],
        cwd=EXAMPLES / name,
        env={**os.environ, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"examples/{name} on {store} failed:\n{out[-6000:]}"
    summary = out.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= MINIMUM[name], summary
    assert "skipped" not in summary and "deselected" in summary, summary
    return summary


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_example_on_sqlite(name: str) -> None:
    run_example(name, "sqlite")


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_example_on_postgres(name: str, postgres_url: str) -> None:
    run_example(name, "postgres", {"EXAMPLES_POSTGRES_URL": postgres_url})

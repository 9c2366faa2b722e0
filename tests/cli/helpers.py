"""Running the `tenure` command in a child process, as a user does, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def run_cli(
    *args: str,
    cwd: Path,
    columns: int = 200,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m tenure ARGS` in `cwd` (whose modules it can import), with only the
    environment the test gives it; the terminal width is fixed (wide by default) so tables
    wrap the same way on every machine."""
    base = {
        "PYTHONPATH": f"{SRC}{os.pathsep}{cwd}",
        "COLUMNS": str(columns),
        "PATH": os.environ["PATH"],
    }
    return subprocess.run(
        [sys.executable, "-m", "tenure", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**base, **(env or {})},
        input=stdin,
    )

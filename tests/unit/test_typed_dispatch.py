"""A job keeps its function's signature for type checkers (ParamSpec): mypy flags a wrong
`dispatch(...)`, `sig(...)` or `options(...).dispatch(...)` argument as it flags a wrong call
of the function, and the return type of a direct call is the function's. Run with the real
mypy over a small module; the same calls still fail at runtime with TypeError at dispatch."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tenure

SRC = Path(__file__).resolve().parents[2] / "src"

MODULE = textwrap.dedent(
    """
    import tenure

    app = tenure.App()


    @app.job
    def send(order_id: int, *, urgent: bool = False) -> None: ...


    @app.job(timeout=5)
    def ping(url: str) -> int:
        return len(url)


    send.dispatch(1)
    send.dispatch(1, urgent=True)
    send.options(delay=5).dispatch(2)
    send.sig(3)
    size: int = ping("x")
    send.dispatch("x")  # BAD
    send.dispatch(1, urgnt=True)  # BAD
    ping.options(queue="q").dispatch()  # BAD
    send.sig("x")  # BAD
    text: str = ping("x")  # BAD
    """
)


def test_mypy_checks_dispatch_arguments_against_the_function(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    (tmp_path / "typedjobs.py").write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "typedjobs.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"MYPYPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    flagged = {int(n) for n in re.findall(r"^typedjobs\.py:(\d+): error", done.stdout, re.M)}
    expected = {n for n, line in enumerate(MODULE.splitlines(), 1) if line.endswith("# BAD")}
    assert flagged == expected, done.stdout


def test_the_same_calls_fail_at_dispatch_at_runtime(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'r.db'}")

    @app.job(name="send")
    def send(order_id: int, *, urgent: bool = False) -> None: ...

    with pytest.raises(TypeError, match="cannot be called with these arguments"):
        send.dispatch(1, urgnt=True)  # type: ignore[call-arg]
    assert app.counts()["queued"] == 0
    app.close()

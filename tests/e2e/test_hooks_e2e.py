"""`@app.on_child_start` (once per child process, before its first attempt) and
`@app.around_attempt` (around each attempt: sync jobs in a child, async jobs on the worker's
event loop, and in tenure.testing), as a Sentry or Django setup uses them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tenure
from tenure.testing import drain

from e2e.helpers import SRC

JOBS = """
import os
import tenure

app = tenure.App("sqlite:///{db}")
LEDGER = {ledger!r}


def note(text):
    with open(LEDGER, "a") as f:
        f.write(f"{{os.getpid()}} {{text}}\\n")


@app.on_child_start
def connect():
    note("child-start")


@app.around_attempt
def scope(ctx):
    note(f"enter {{ctx.name}} {{ctx.attempt}}")
    try:
        yield
    except Exception as exc:
        note(f"error {{ctx.name}} {{type(exc).__name__}}")
        raise
    note(f"exit {{ctx.name}}")


@app.job(name="work")
def work(n):
    note(f"run work {{n}}")
    return n


@app.job(name="boom", tries=1)
def boom():
    raise KeyError("nope")


@app.job(name="later")
async def later():
    note("run later")
    return "ok"
"""


def test_hooks_run_in_a_real_worker(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    (tmp_path / "hookjobs.py").write_text(JOBS.format(db=tmp_path / "h.db", ledger=str(ledger)))
    sys.path.insert(0, str(tmp_path))
    try:
        import hookjobs

        ids = [hookjobs.work.dispatch(i).id for i in (1, 2)]
        ids += [hookjobs.boom.dispatch().id, hookjobs.later.dispatch().id]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}
        done = subprocess.run(
            [sys.executable, "-m", "tenure", "worker", "--app", "hookjobs:app", "--burst"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        states = [hookjobs.app.get_job(i).state for i in ids]
        assert states == ["succeeded", "succeeded", "failed", "succeeded"]
        hookjobs.app.close()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("hookjobs", None)
    lines = [line.split(" ", 1) for line in ledger.read_text().splitlines()]
    texts = [text for _, text in lines]
    child_pids = {pid for pid, text in lines if text == "child-start"}
    assert len(child_pids) == 1  # one child ran the sync jobs; its hook ran once
    work_pid = next(pid for pid, text in lines if text == "run work 1")
    assert work_pid in child_pids
    first = texts.index("child-start")
    assert texts.index("enter work 1") > first  # set up before the first attempt
    for n in (1, 2):  # each attempt inside its hook
        i = texts.index(f"run work {n}")
        assert texts[i - 1] == "enter work 1" and texts[i + 1] == "exit work"
    assert "error boom KeyError" in texts  # the hook saw the job's exception
    j = texts.index("run later")
    assert texts[j - 1] == "enter later 1" and texts[j + 1] == "exit later"  # async too


def test_around_attempt_applies_in_the_test_helpers(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")
    seen: list[str] = []

    @app.around_attempt
    def record(ctx: tenure.JobContext):  # type: ignore[no-untyped-def]
        seen.append(f"enter {ctx.name}")
        yield
        seen.append(f"exit {ctx.name}")

    @app.around_attempt
    def refuse(ctx: tenure.JobContext):  # type: ignore[no-untyped-def]
        if ctx.name == "guarded":
            raise PermissionError("not on this host")
        yield

    @app.job(name="hello")
    def hello() -> str:
        seen.append("run hello")
        return "hi"

    @app.job(name="guarded", tries=1)
    def guarded() -> None:
        seen.append("run guarded")

    ok, refused = hello.dispatch(), guarded.dispatch()
    drain(app)
    assert seen == ["enter hello", "run hello", "exit hello", "enter guarded"]
    assert app.get_job(ok.id).result == "hi"
    failed = app.get_job(refused.id)
    assert failed.state == "failed" and "PermissionError: not on this host" in (
        failed.last_error or ""
    )
    app.close()

"""Jobs for the dashboard tests. Copied into each test's directory with its own store URL, the
way tests/e2e does, so every test has a fresh store (this file is a template, not a test)."""

import os
import signal
import time

import tenure

app = tenure.App("__STORE_URL__")


@app.job(timeout=30, tries=3, backoff=0)
def tick(n: int) -> None:
    # A few milliseconds each: 2,000 of them take long enough for a person (and a test) to
    # watch the progress bar move.
    time.sleep(0.004)


@app.job(timeout=30, tries=1)
def fails_first(n: int = 0) -> None:
    if tenure.current().attempt == 1:
        raise RuntimeError("first attempt fails on purpose")


@app.job(timeout=30, tries=3, backoff=0)
def crashes_first() -> None:
    if tenure.current().attempt == 1:
        os.kill(os.getpid(), signal.SIGKILL)


@app.job(timeout=30, tries=1)
def always_fails(n: int = 0) -> None:
    raise ValueError(f"row {n} is bad")


@app.job(timeout=30, encrypted=True)
def charge(card: str) -> None:
    pass


@app.job(timeout=30)
def done(kind: str) -> None:
    pass


@app.job(timeout=30)
def totals(n: int) -> dict[str, object]:
    return {"n": n, "html": "<b>not markup</b>"}

"""Jobs for the end-to-end tests of cancel and pause: no transactional job, so that the
template loads on every backend."""

import os
import time

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

app = tenure.App(STORE_URL)


def note(event: str) -> None:
    """Append one line per event, with O_APPEND: the record of what ran, outside tenure."""
    ctx = tenure.current()
    line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} {event} {time.time():.3f}\n"
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@app.job(timeout=30)
def noop(n: int = 0) -> None:
    note("ran")


@app.job(timeout=30, queue="other")
def elsewhere(n: int = 0) -> None:
    note("ran")


@app.job(timeout=60, kill_after=5, tries=3, backoff=0)
def until_cancelled() -> None:
    """Cleans up at the cancel signal: it sees ctx.cancelled and stops."""
    note("start")
    try:
        while True:
            time.sleep(0.05)
    except tenure.CancelRequested:
        note(f"cancelled:{tenure.current().cancelled}")
        raise


# kill_after 3 s, not 1: on a loaded 2-core machine (the whole suite running) the child may
# take over a second to be scheduled and handle the soft signal, and a kill before it does
# leaves no "caught" to measure from
@app.job(timeout=60, kill_after=3, tries=3, backoff=0)
def ignores_cancel() -> None:
    """Swallows the cancel signal and keeps going: the worker kills it after kill_after."""
    deadline = time.monotonic() + 60
    noted = False
    while time.monotonic() < deadline:
        try:
            # the test cancels once it reads "start": the signal can land while this line is
            # still closing the ledger, so it is inside the try too (a CI rehearsal under load
            # saw the job stop at the signal there, outside the try)
            if not noted:
                noted = True
                note("start")
            time.sleep(0.05)
        except tenure.CancelRequested:
            note("caught")
    note("end")


@app.job(timeout=60, tries=1)
def sleep_for(seconds: float) -> None:
    note("start")
    time.sleep(seconds)
    note("end")


@app.job(timeout=60, tries=3, backoff=0)
async def async_until_cancelled() -> None:
    """An async job: CancelledError at its await, with ctx.cancelled."""
    import asyncio

    note("start")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        note(f"cancelled:{tenure.current().cancelled}")
        raise

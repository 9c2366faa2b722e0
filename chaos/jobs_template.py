"""Jobs for the chaos suite. Copied into each run's directory with its store URL and ledger.

Every execution appends lines to the ledger with O_APPEND (one write per line, atomic for
short lines): `start` when the body is entered, `effect` when `once()` granted the effect,
`end` when the body returns. The ledger is the checker's record of what really ran,
independent of tenure's own bookkeeping. Times come from CLOCK_REALTIME directly, so the
clock-skew shim (which offsets time.time) does not bend them.
"""

import os
import time
from datetime import timedelta

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

# kill-prune's workers keep succeeded jobs CHAOS_KEEP_S seconds, so they prune during the run
KEEP_S = os.environ.get("CHAOS_KEEP_S")
app = tenure.App(STORE_URL, keep_succeeded=float(KEEP_S) if KEEP_S else None)


def note(event: str) -> None:
    ctx = tenure.current()
    at = time.clock_gettime(time.CLOCK_REALTIME)
    line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} {os.getppid()} {event} {at:.4f}\n"
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def pause(ms: float) -> None:
    """Sleep in small steps; a soft timeout interrupts a step like any other code."""
    end = time.monotonic() + ms / 1000.0
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


# Unlimited tries bounded by a deadline: a job killed again and again by the fault schedule
# must end up succeeding, never failing because the schedule was unlucky.
PATIENT = {"tries": None, "retry_until": timedelta(hours=2), "backoff": 0}


@app.job(timeout=30, **PATIENT)
def work(n: int, ms: float = 0.0, effect: bool = True) -> None:
    note("start")
    if effect and tenure.current().once("effect"):
        note("effect")
    pause(ms)
    note("end")


@app.job(timeout=1, kill_after=1, tries=2, backoff=0)
def stubborn(seconds: float) -> None:
    """Ignores the soft timeout: the worker must kill it at timeout + kill_after."""
    note("start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(0.05)
        except tenure.JobTimeout:
            note("ignored-timeout")
    note("end")


@app.job(timeout=20, tries=2, backoff=0)
def hog(mb: int, hold_ms: float = 3000.0) -> None:
    """Allocates past the worker's --memory cap: the child is killed (crashed)."""
    note("start")
    block = bytearray(mb * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    pause(hold_ms)
    note("end")


@app.job(timeout=30)
async def awork(n: int, ms: float = 0.0) -> None:
    import asyncio

    note("start")
    await asyncio.sleep(ms / 1000.0)
    note("end")


# kill-periodic's job, registered only in that scenario's workers (the harness sets
# CHAOS_PERIODIC for them): their own tickers dispatch it every second. It keeps its own ledger,
# since the checker's ledger holds the jobs the load generator dispatched.
PERIODIC_LEDGER = os.path.join(os.path.dirname(LEDGER), "periodic.txt")

if os.environ.get("CHAOS_PERIODIC"):

    @app.periodic("* * * * * *", timeout=30, **PATIENT)
    def every_second() -> None:
        ctx = tenure.current()
        at = time.clock_gettime(time.CLOCK_REALTIME)
        line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} start {at:.4f}\n"
        fd = os.open(PERIODIC_LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        pause(50)


@app.job(timeout=30, tries=1)
def chain_fail(n: int) -> None:
    """kill-chains' stopping link: fails for good on its one try (a kill costs it that try
    too), so its chain stops there."""
    note("start")
    pause(20)
    note("end")
    raise RuntimeError(f"chain link {n} fails on purpose")

"""Jobs for the end-to-end tests. Copied into each test's directory with its own store URL
and ledger, so every test has a fresh store and its own record of what really ran."""

import os
import signal
import time
from datetime import timedelta

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

app = tenure.App(STORE_URL)
# Redis cannot commit a job's own writes with its completion: tenure refuses it at definition.
TRANSACTIONAL = not STORE_URL.startswith("redis")


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


@app.job(timeout=60, tries=3, backoff=0)
def sleep_for(seconds: float) -> None:
    note("start")
    time.sleep(seconds)
    note("end")


@app.job(timeout=1, kill_after=1, tries=3, backoff=0)
def too_slow() -> None:
    note("start")
    time.sleep(20)
    note("end")


@app.job(timeout=1, kill_after=1, tries=3, backoff=0, fail_on_timeout=True)
def too_slow_fail_fast() -> None:
    note("start")
    time.sleep(20)


@app.job(timeout=1, kill_after=1, tries=1)
def ignores_timeout() -> None:
    note("start")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            time.sleep(0.1)
        except tenure.JobTimeout:
            note("caught")
    note("end")


@app.job(tries=None, retry_until=timedelta(minutes=5), max_exceptions=2, backoff=0)
def crash_always() -> None:
    note("start")
    os.kill(os.getpid(), signal.SIGKILL)


@app.job(timeout=30, tries=3, backoff=0)
def flaky() -> None:
    note("start")
    if tenure.current().attempt == 1:
        raise RuntimeError("first attempt fails on purpose")


@app.job(timeout=5)
def big_memory(mb: int) -> None:
    note("start")
    hog = bytearray(mb * 1024 * 1024)
    for i in range(0, len(hog), 4096):
        hog[i] = 1
    time.sleep(10)
    note("end")


@app.job(timeout=5)
async def async_noop() -> None:
    import asyncio

    note("ran")
    await asyncio.sleep(0.01)


@app.job(timeout=1, tries=1)
async def async_too_slow() -> None:
    import asyncio

    note("start")
    await asyncio.sleep(20)


@app.job(timeout=30, queue="high")
def urgent(n: int = 0) -> None:
    note("ran")


@app.job(timeout=30, tries=3, backoff=0)
def export_rows(lo: int, hi: int) -> None:
    note(f"range:{lo}-{hi}")


@app.job(timeout=30, tries=3, backoff=0)
def slow_rows(lo: int, hi: int) -> None:
    note(f"range:{lo}-{hi}")
    time.sleep(0.2)


@app.job(timeout=30, tries=1)
def member(n: int, bad: bool = False) -> None:
    note(f"member:{n}")
    if bad:
        raise ValueError(f"member {n} is bad")


@app.job(timeout=30)
def callback(kind: str) -> None:
    note(f"callback:{kind}")


@app.job(timeout=30, unique=lambda order_id: order_id)
def unique_order(order_id: int) -> None:
    note("ran")


@app.job(timeout=30, tries=2, backoff=0, overlap=lambda customer, n: customer, overlap_delay=0.02)
def per_customer(customer: str, n: int) -> None:
    note(f"customer:{customer}")
    time.sleep(0.01)


@app.job(timeout=30, tries=1, rate_limit="20/second")
def limited(n: int) -> None:
    note("ran")


@app.job(timeout=30, tries=10, backoff=0)
def charge(n: int) -> None:
    ctx = tenure.current()
    if ctx.once("charge"):
        note("charge")
    time.sleep(0.02)


@app.job(timeout=30, tries=3, backoff=0)
def charge_then_crash() -> None:
    ctx = tenure.current()
    with ctx.once("charge") as first:
        if first:
            note("charge")
    if ctx.attempt == 1:
        os.kill(os.getpid(), signal.SIGKILL)


@app.job(timeout=30, tries=20, backoff=0, transactional=TRANSACTIONAL)
def insert_row(n: int) -> None:
    ctx = tenure.current()
    conn = ctx.transaction()
    conn.execute("INSERT INTO shop_rows (job_id, n) VALUES (?, ?)", (ctx.job_id, n))
    time.sleep(0.01)


@app.job(timeout=30, tries=5, transactional=TRANSACTIONAL)
def insert_and_commit(n: int) -> None:
    ctx = tenure.current()
    conn = ctx.transaction()
    conn.execute("INSERT INTO shop_rows (job_id, n) VALUES (?, ?)", (ctx.job_id, n))
    conn.commit()  # wrong: tenure commits this connection with the job's success


@app.job(timeout=30, tries=1, transactional=TRANSACTIONAL)
def insert_then_fail(n: int) -> None:
    ctx = tenure.current()
    ctx.transaction().execute("INSERT INTO shop_rows (job_id, n) VALUES (?, ?)", (ctx.job_id, n))
    raise RuntimeError("the job fails after writing its row")

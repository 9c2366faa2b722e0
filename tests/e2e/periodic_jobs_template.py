"""A periodic job for the end-to-end tests, on a clock the test owns: the time the workers'
periodic tickers read is in a file the test writes, so it decides when each due time comes.
The store's own clock still stamps every job, lease and attempt."""

import os
import time
from pathlib import Path

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"
CLOCK = Path(LEDGER).with_name("clock.txt")

app = tenure.App(STORE_URL)


def test_clock() -> float:
    return float(CLOCK.read_text())


app.now = test_clock  # type: ignore[method-assign]


@app.periodic("*/5 * * * *", tz="Europe/Rome", timeout=30)
def every_five_minutes() -> None:
    ctx = tenure.current()
    line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} ran {time.time():.3f}\n"
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)

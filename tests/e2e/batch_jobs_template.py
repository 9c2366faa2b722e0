"""Batch jobs for the end-to-end tests on the server backends: the part of jobs_template.py the
batch scenarios use, without the jobs only some stores accept (transactional=True). Copied into
each test's directory with its own store URL and ledger."""

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


@app.job(timeout=30)
def total(order_id: int) -> dict[str, int]:
    return {"order": order_id, "total": order_id * 10}


@app.job(timeout=30)
async def async_total(order_id: int) -> list[int]:
    return [order_id, order_id * 10]


@app.job(timeout=30)
def scale(value: int, factor: int) -> int:
    note(f"scale:{value}*{factor}")
    return value * factor


@app.job(timeout=30)
async def async_scale(value: int, factor: int) -> int:
    note(f"async_scale:{value}*{factor}")
    return value * factor

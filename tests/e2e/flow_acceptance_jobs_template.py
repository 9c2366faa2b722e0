"""Jobs for the flow-control acceptance checks (issue 31) that tests/e2e/test_flow_e2e.py does
not make with real workers: fair share by tenant (plain and weighted), and limits kept by the
links of chains and the members of a batch. Each notes its body's start and end in the ledger,
outside tenure."""

import os
import time

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

app = tenure.App(STORE_URL)


def note(event: str) -> None:
    ctx = tenure.current()
    line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} {event} {time.time():.6f}\n"
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@app.job(timeout=30, fair_key=lambda tenant, n: tenant)
def import_row(tenant: str, n: int) -> None:
    note(f"row:{tenant}")


@app.job(timeout=30)
def plain_row(tenant: str, n: int) -> None:
    note(f"row:{tenant}")


@app.job(timeout=30, fair_key=lambda tenant, n: tenant, fair_weights={"enterprise": 3})
def weighted_row(tenant: str, n: int) -> None:
    note(f"row:{tenant}")


@app.job(timeout=30, concurrency=1)
def chained(n: int) -> None:
    note("start")
    time.sleep(0.05)
    note("end")


@app.job(timeout=30, concurrency=2)
def member(n: int) -> None:
    note("start")
    time.sleep(0.05)
    note("end")


@app.job(timeout=30)
def settled() -> None:
    note("settled")

"""Jobs for the flow-control end-to-end tests (issue 31): a job limited to 2 running at once,
one limited to 1 per account, a plain one, and a debounced one. Each notes when its body starts
and ends in the ledger, outside tenure."""

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


@app.job(timeout=30, concurrency=2)
def call_model(n: int) -> None:
    note("start")
    time.sleep(0.05)
    note("end")


@app.job(timeout=30, concurrency=1, concurrency_key=lambda account, n: account)
def sync_account(account: str, n: int) -> None:
    note(f"start:{account}")
    time.sleep(0.05)
    note(f"end:{account}")


@app.job(timeout=30)
def plain(n: int) -> None:
    note("plain")


@app.job(timeout=30, debounce=2, debounce_key=lambda doc, version: doc)
def reindex(doc: int, version: int) -> None:
    note(f"reindex:{doc}:{version}")


@app.job(timeout=30, tries=20, backoff=0, concurrency=3)
def storm(n: int) -> None:
    note("start")
    time.sleep(0.3)
    note("end")

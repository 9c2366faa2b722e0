"""The jobs `tenure demo` runs: each shows one promise. The store comes from $TENURE_URL,
which `tenure demo` points at a throwaway SQLite file."""

from __future__ import annotations

import os
import signal
import time

import tenure

app = tenure.App()


@app.job(timeout=10, backoff=1)
def send_invoice(order_id: int) -> None:
    """Quick work: the bulk of any queue."""
    time.sleep(0.3)


@app.job(timeout=30)
def build_report(seconds: float) -> None:
    """Runs longer than the worker's lease: heartbeats keep it, so it runs exactly once."""
    time.sleep(seconds)


@app.job(timeout=10, tries=3, backoff=1)
def call_flaky_api() -> None:
    """Fails once, as remote APIs do, then succeeds on the retry."""
    if tenure.current().attempt == 1:
        raise ConnectionError("api.example.com reset the connection")
    time.sleep(0.2)


@app.job(timeout=10, tries=3, backoff=1)
def resize_huge_image() -> None:
    """The first attempt's process is killed, as the OOM killer would; the crash is counted."""
    if tenure.current().attempt == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)


@app.job(timeout=1, kill_after=1, tries=2, backoff=1)
def sync_inventory() -> None:
    """Always slower than its timeout: timed out twice, then failed with the reason."""
    time.sleep(5)

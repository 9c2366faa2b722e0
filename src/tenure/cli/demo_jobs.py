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


def export_dir() -> str:
    return os.environ.get("TENURE_DEMO_DIR", ".")


@app.job(timeout=10, tries=3, backoff=1)
def export_rows(lo: int, hi: int) -> None:
    """One small job of the export: rows lo..hi into a part file. Idempotent: a re-run
    rewrites the same part, atomically."""
    parts = os.path.join(export_dir(), "parts")
    os.makedirs(parts, exist_ok=True)
    part = os.path.join(parts, f"{lo:09d}.csv")
    with open(part + ".tmp", "w") as f:
        f.writelines(f"{i},{i * i % 9973}\n" for i in range(lo, hi + 1))
    os.replace(part + ".tmp", part)


@app.job(timeout=30)
def finish_export(filename: str) -> None:
    """The batch's `then`: builds the result from the parts, once every range is done."""
    parts = os.path.join(export_dir(), "parts")
    with open(os.path.join(export_dir(), filename), "w") as out:
        out.write("id,value\n")
        for name in sorted(os.listdir(parts)):
            with open(os.path.join(parts, name)) as part:
                out.write(part.read())

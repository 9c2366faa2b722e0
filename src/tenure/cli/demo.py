"""`tenure demo`: the whole story on the embedded SQLite store, with a real worker process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tenure.app import App
from tenure.describe import OUTCOME_WORDS, describe_job
from tenure.job import JobHandle

DEADLINE_S = 90.0
EXPECTED = {
    "send_invoice": "succeeded",
    "build_report": "succeeded",
    "call_flaky_api": "succeeded",
    "resize_huge_image": "succeeded",
    "sync_inventory": "failed",
}


def run_demo(console: Console, *, keep: bool = False) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="tenure-demo-"))
    os.environ["TENURE_URL"] = f"sqlite:///{workdir / 'demo.db'}"
    os.environ["TENURE_DEMO_DIR"] = str(workdir)
    from tenure.cli import demo_jobs

    app = demo_jobs.app
    console.print(f"[bold]tenure demo[/bold] — store: {app.url}\n")
    handles = demo_jobs.send_invoice.dispatch_many([(n,) for n in range(1001, 1013)])
    handles += [
        demo_jobs.build_report.dispatch(5),
        demo_jobs.call_flaky_api.dispatch(),
        demo_jobs.resize_huge_image.dispatch(),
        demo_jobs.sync_inventory.dispatch(),
    ]
    console.print(
        f"dispatched {len(handles)} jobs: 12 invoices, a 5 s report (the worker's lease is 2 s),"
        " a flaky API call, an image job whose process gets killed, and an inventory sync that"
        " is always slower than its 1 s timeout.\n"
    )
    log_path = workdir / "worker.log"
    worker = _start_worker(log_path)
    try:
        settled = _follow(console, app, [h.id for h in handles])
        ok = settled and _report(console, app, handles)
        ok = _export_story(console, app, workdir) and ok
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    console.print(f"\nworker log: {log_path}" if keep else "")
    if not keep:
        app.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


def _start_worker(log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tenure",
                "worker",
                "--app",
                "tenure.cli.demo_jobs:app",
                "--concurrency",
                "4",
                "--lease",
                "2",
                "--grace",
                "5",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def _export_story(console: Console, app: App, workdir: Path) -> bool:
    from tenure.cli import demo_jobs
    from tenure.cli.watch import summary, watch_batch

    console.print(
        "\n[bold]Exporting 100,000 rows[/bold] as a batch of small jobs: a coordinator adds one"
        " job per 500 ids, 50 at a time, then the next coordinator; the total is declared once,"
        " so the bar never goes backwards. Closing it would not stop the work.\n"
    )
    b = app.batch_over_ids(
        demo_jobs.export_rows,
        1,
        100_000,
        chunk=500,
        slice_jobs=50,
        name="export 100,000 rows",
        then=demo_jobs.finish_export.sig("export.csv"),
    )
    info = watch_batch(app, b.id, console, poll=0.2)
    console.print(summary(info), highlight=False)
    result = workdir / "export.csv"
    deadline = time.monotonic() + DEADLINE_S
    while info.then_job_id and app.get_job(info.then_job_id).state not in ("succeeded", "failed"):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    rows = result.read_text().count("\n") - 1 if result.exists() else 0
    console.print(f"then -> finish_export wrote {rows:,} rows to {result.name}")
    return info.state == "succeeded" and rows == 100_000


def _follow(console: Console, app: App, ids: list[str]) -> bool:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    deadline = time.monotonic() + DEADLINE_S
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("jobs settled", total=len(ids))
        while time.monotonic() < deadline:
            states = [app.get_job(i).state for i in ids]
            done = sum(s in ("succeeded", "failed", "cancelled") for s in states)
            progress.update(task, completed=done)
            if done == len(ids):
                return True
            time.sleep(0.2)
    console.print("[red]the demo's jobs did not settle in time[/red]")
    return False


def _report(console: Console, app: App, handles: list[JobHandle]) -> bool:
    table = Table("job", "state", "attempts")
    ok = True
    shown: dict[str, str] = {}
    for h in handles:
        info = app.get_job(h.id)
        ok = ok and info.state == EXPECTED[info.name]
        trail = " → ".join(OUTCOME_WORDS.get(a.outcome or "", "running") for a in info.attempts)
        if info.name == "send_invoice" and "send_invoice" in shown:
            continue
        shown[info.name] = h.id
        label = "send_invoice (12 jobs)" if info.name == "send_invoice" else info.name
        table.add_row(label, info.state, trail)
    console.print(table)
    for name in ("build_report", "resize_huge_image", "sync_inventory"):
        console.print(f"\n[bold]$ tenure jobs show {shown[name]}[/bold]")
        for line in describe_job(app.get_job(shown[name])):
            console.print(line, highlight=False, soft_wrap=True)
    console.print(
        "\nThe report outlived its 2 s lease and still ran once: the worker renewed the lease"
        " while it ran. The killed image job was seen as a crash, counted, and retried. The"
        " inventory sync timed out twice and failed with its reason, not silently."
    )
    if not ok:
        console.print("[red]some jobs did not end as the story expects[/red]")
    return ok

"""Jobs that start processes of their own, block an event loop, or sleep: for the tests of how
a worker ends an attempt's whole process tree, stops, and drains. Copied into each test's
directory with its own store URL and ledger (see e2e.helpers.Project)."""

import os
import subprocess
import sys
import time
from pathlib import Path

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


def start_grandchild(argv: list[str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv)
    note(f"grandchild:{proc.pid}")
    return proc


@app.job(timeout=30)
def noop(n: int = 0) -> None:
    note("ran")


@app.job(timeout=60, tries=3, backoff=0)
def sleep_for(seconds: float) -> None:
    note("start")
    time.sleep(seconds)
    note("end")


@app.job(timeout=1, kill_after=1, tries=1)
def spawn_and_ignore_timeout() -> None:
    """Like ffmpeg under a job that swallows its JobTimeout: only a hard kill ends it."""
    start_grandchild(["sleep", "1000"])
    note("start")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            time.sleep(0.1)
        except tenure.JobTimeout:
            note("caught")
    note("end")


@app.job(timeout=1, kill_after=1, tries=1)
def spawn_double_forked_and_ignore_timeout() -> None:
    """`setsid cmd &` from a shell: a session of its own, and its parent (the shell) gone at
    once, so neither the child's session nor its descendants name it any more."""
    pidfile = f"{LEDGER}.{os.getpid()}.pid"
    subprocess.run(
        [
            "sh",
            "-c",
            f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 1000' </dev/null >/dev/null 2>&1 &",
        ],
        check=True,
    )
    written = Path(pidfile)
    while not (written.exists() and written.read_text().endswith("\n")):
        time.sleep(0.01)  # the shell writes it at once; the test's own deadline bounds this
    note(f"grandchild:{int(written.read_text())}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            time.sleep(0.1)
        except tenure.JobTimeout:
            note("caught")


@app.job(timeout=60, tries=1)
def orphan_that_ends() -> None:
    """`setsid cmd &` whose cmd ends at once: the orphan comes back to the worker's child (a
    subreaper) and has ended, unreaped, when the job returns; the child must reap it."""
    pidfile = f"{LEDGER}.{os.getpid()}.orphan"
    subprocess.run(
        ["sh", "-c", f"setsid sh -c 'echo $$ > {pidfile}' </dev/null >/dev/null 2>&1 &"],
        check=True,
    )
    written = Path(pidfile)
    while not (written.exists() and written.read_text().endswith("\n")):
        time.sleep(0.01)  # the test's own deadline bounds this
    pid = int(written.read_text())
    note(f"orphan:{pid}")
    while _state(pid) not in (b"Z", b""):
        time.sleep(0.01)  # it ends at once; a zombie until its new parent reaps it


def _state(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0]
    except OSError:
        return b""


@app.job(timeout=120, tries=1)
def spawn_and_wait() -> None:
    start_grandchild(["sleep", "1000"]).wait()
    note("end")


@app.job(timeout=60, tries=1)
def spawn_memory_hog(mb: int) -> None:
    """The job's own process stays small; the process it starts holds the memory."""
    hog = f"b = bytearray({mb} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
    start_grandchild([sys.executable, "-c", hog + "import time; time.sleep(1000)"]).wait()
    note("end")


@app.job(timeout=1, tries=1)
async def async_blocks(seconds: float) -> None:
    note("start")
    time.sleep(seconds)  # a blocking call: the event loop cannot cancel it at the timeout
    note("end")

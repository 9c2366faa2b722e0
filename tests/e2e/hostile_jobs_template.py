"""Jobs whose errors are hostile to being recorded, for test_hostile_errors_e2e.py: a text no
store can encode as it is, an exception whose str() raises, a huge message."""

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

app = tenure.App(STORE_URL)


@app.job(timeout=30, tries=3, backoff=0)
def unencodable() -> None:
    raise ValueError("a\x00b \ud800 end")


class Unreadable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


@app.job(timeout=30, tries=3, backoff=0)
def unreadable() -> None:
    raise Unreadable()


@app.job(timeout=30, tries=1)
def huge_message() -> None:
    raise ValueError("HEAD" + "x" * 5_000_000 + "TAIL")


@app.job(timeout=30, tries=3, backoff=0)
async def async_unreadable() -> None:
    raise Unreadable()


@app.job(timeout=30, tries=1)
def segfaults() -> None:
    import ctypes

    ctypes.string_at(0)  # reads address 0: SIGSEGV


@app.job(timeout=30, tries=1)
def exits_mid_attempt() -> None:
    import os

    os._exit(3)


@app.job(timeout=30, tries=1)
def killed_from_outside() -> None:
    import os
    import signal
    import time

    held = b"x" * (80 * 1024 * 1024)  # resident: the worker's memory reading sees it
    time.sleep(1.5)  # past the worker's next reading (every 0.5 s)
    os.kill(os.getpid(), signal.SIGKILL)  # as `kill -9` from a shell would
    print(len(held))


@app.job(timeout=1, kill_after=1, tries=1)
def ignores_its_timeout() -> None:
    import contextlib
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(tenure.JobTimeout):  # swallowed: only the kill ends it
            time.sleep(0.1)


@app.job(timeout=120, tries=3, backoff=0)
def long_report(seconds: float) -> None:
    import time

    time.sleep(seconds)


@app.job(timeout=120, tries=1)
def grows_until_killed() -> None:
    """Reads more and more into memory, as a job with an unbounded query does: inside a
    memory-limited cgroup, the kernel's OOM killer ends it."""
    import time

    held = []
    for _ in range(200):  # 10 GB at most: far past any limit a test sets
        held.append(b"x" * (50 * 1024 * 1024))
        time.sleep(0.2)

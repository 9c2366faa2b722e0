"""The supervisor as watchdog of children that run and record their own attempts: what it
does when a child dies before it read what the child said, when it learns of an attempt the
store has already rescued, and when one renewal of several is refused.

Real parts: a SQLite store, real child processes (`python -m tenure.worker.child`), real
signals; the worker is not started, the test drives its slots' watch and lease renewal.
"""

from __future__ import annotations

import importlib
import logging
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tenure.app import App
from tenure.core.records import Reservation
from tenure.settings import WorkerOptions
from tenure.worker import messages
from tenure.worker.leases import LeaseKeeper
from tenure.worker.slot import Slot
from tenure.worker.supervisor import Worker

JOBS = """
import os, signal, sys, time
import tenure

app = tenure.App("sqlite:///{db}")

@app.job
def noop():
    pass

@app.job
def die():
    os.kill(os.getpid(), signal.SIGKILL)

@app.job
def nap():
    time.sleep(60)

@app.job
def garble():
    # what a job (or a C extension) writing to the wrong descriptor would do to the protocol
    os.write(int(sys.argv[3]), b"garbage\\n")
    time.sleep(60)
"""


def wait_until(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def make_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Worker]]:
    name = f"watch_jobs_{secrets.token_hex(4)}"
    (tmp_path / f"{name}.py").write_text(JOBS.format(db=tmp_path / "t.db"))
    monkeypatch.chdir(tmp_path)  # the children import the jobs module from here
    monkeypatch.syspath_prepend(str(tmp_path))
    app: App = importlib.import_module(name).app
    app.store.migrate()
    made: list[Worker] = []
    done = threading.Event()

    def beat(worker: Worker) -> None:
        # The worker is not started, so its lease guard does not write the pulse; without
        # it a child that took over 0.3 s to start (a loaded machine) would think its
        # supervisor gone and hand every end back instead of recording it.
        while not done.wait(0.05):
            worker.pulse.beat()

    def make(**options: object) -> Worker:
        worker = Worker(app, WorkerOptions(app_spec=f"{name}:app", **options))  # type: ignore[arg-type]
        made.append(worker)
        threading.Thread(target=beat, args=(worker,), daemon=True).start()
        return worker

    yield make
    done.set()
    for worker in made:
        for slot in worker.slots:
            slot._discard_child()
    app.close()
    sys.modules.pop(name, None)


def reserve(worker: Worker, *, lease: float) -> Reservation:
    [res] = worker.store.reserve(queues=["default"], worker=worker.ref, lease=lease, limit=1)
    return res


def hand(slot: Slot, res: Reservation, *, chain: bool) -> None:
    """What the slot's thread does with a job the fetch loop reserved, up to the watch."""
    slot.assign_current(res, time.monotonic())
    child = slot.child_process()
    child.send(messages.encode(messages.Run(res, chain)))


def watch_in_thread(slot: Slot) -> threading.Thread:
    assert slot.child is not None
    child = slot.child
    thread = threading.Thread(target=slot.watch, args=(child,), daemon=True)
    thread.start()
    return thread


def outcomes(worker: Worker, job_id: str) -> list[str | None]:
    record = worker.app.get_job(job_id)
    return [a.outcome for a in record.attempts]


def test_a_child_that_dies_before_its_start_message_is_read(
    make_worker: Callable[..., Worker],
) -> None:
    worker = make_worker()
    first = worker.app.jobs["noop"].dispatch()
    fatal = worker.app.jobs["die"].dispatch()
    slot = worker.slots[0]
    hand(slot, reserve(worker, lease=30), chain=True)
    child = slot.child
    assert child is not None
    # The child records `noop`, claims `die` in the same call, says so, and dies of it; the
    # supervisor reads nothing until the child is dead.
    child.proc.wait(timeout=30)
    assert slot.watch(child) is None
    assert outcomes(worker, first.id) == ["succeeded"]
    assert outcomes(worker, fatal.id)[:1] == ["crashed"]
    crash = worker.app.get_job(fatal.id).attempts[0]
    assert crash.error is not None and "signal 9" in crash.error, crash.error
    assert slot.current is None and slot.child is None


def test_the_log_lines_a_killed_child_gathered_are_written_by_its_supervisor(
    make_worker: Callable[..., Worker],
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the child writes its success lines together (worker/log_spool.py); it dies in the job
    # it claimed after them, before it wrote them, and none is lost
    monkeypatch.setenv("TENURE_LOG_FORMAT", "json")
    caplog.set_level(logging.INFO, logger="tenure")  # the level the child is started with
    worker = make_worker()
    ran = [worker.app.jobs["noop"].dispatch() for _ in range(3)]
    fatal = worker.app.jobs["die"].dispatch()
    slot = worker.slots[0]
    hand(slot, reserve(worker, lease=30), chain=True)
    child = slot.child
    assert child is not None
    child.proc.wait(timeout=30)
    assert slot.watch(child) is None
    assert outcomes(worker, fatal.id)[:1] == ["crashed"]
    written = capfd.readouterr().err
    for job in ran:
        assert f"job {job.id} noop attempt 1 succeeded" in written, written


def test_a_long_job_does_not_hold_back_the_lines_of_the_jobs_before_it(
    make_worker: Callable[..., Worker],
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TENURE_LOG_FORMAT", "json")
    caplog.set_level(logging.INFO, logger="tenure")
    worker = make_worker()
    ran = [worker.app.jobs["noop"].dispatch() for _ in range(2)]
    napping = worker.app.jobs["nap"].dispatch()  # sleeps 60 s
    slot = worker.slots[0]
    hand(slot, reserve(worker, lease=30), chain=True)
    watch_in_thread(slot)
    written = ""

    def lines_out() -> bool:
        nonlocal written
        written += capfd.readouterr().err
        return all(f"job {job.id} noop attempt 1 succeeded" in written for job in ran)

    wait_until(lines_out, "the success lines, written while the next job runs", timeout=20)
    assert worker.app.get_job(napping.id).state == "running"


def test_a_start_message_for_an_attempt_the_store_already_rescued(
    make_worker: Callable[..., Worker],
) -> None:
    worker = make_worker(lease=1.0)
    worker.app.jobs["noop"].dispatch()
    napping = worker.app.jobs["nap"].dispatch()
    slot = worker.slots[0]
    hand(slot, reserve(worker, lease=30), chain=True)
    # the child claims `nap` (lease 1 s) and sleeps in it; its start message waits unread
    # while the lease expires and the store rescues the attempt
    wait_until(
        lambda: any(r.job_id == napping.id for r in worker.store.sweep(prune=False).rescued),
        "rescue",
    )
    assert outcomes(worker, napping.id) == ["crashed"]
    assert slot.child is not None
    child = slot.child
    watching = watch_in_thread(slot)
    wait_until(lambda: slot.current is not None and slot.current.job_id == napping.id, "start")
    assert LeaseKeeper(worker)._renew_leases()  # the store says: that lease is gone
    watching.join(timeout=30)
    assert not watching.is_alive(), "the watchdog did not stop the attempt"
    assert child.proc.returncode is not None, "the child still runs a rescued attempt"
    # the watchdog's own end is fenced: refused, noted on the rescued attempt, which stays
    # closed; the job waits for its retry
    [attempt] = worker.app.get_job(napping.id).attempts
    assert attempt.outcome == "lost_lease" and "refused (fencing)" in (attempt.error or "")
    assert worker.app.get_job(napping.id).state != "running"
    assert worker.metrics.leases_lost == 1


def test_a_renewal_that_fails_for_one_attempt_but_not_the_others(
    make_worker: Callable[..., Worker],
) -> None:
    worker = make_worker(concurrency=2)
    lost = worker.app.jobs["nap"].dispatch()
    kept = worker.app.jobs["nap"].dispatch()
    short = reserve(worker, lease=1)
    assert short.job_id == lost.id
    long = reserve(worker, lease=30)
    doomed, healthy = worker.slots
    hand(doomed, short, chain=False)
    hand(healthy, long, chain=False)
    threads = [watch_in_thread(doomed), watch_in_thread(healthy)]
    wait_until(
        lambda: any(r.job_id == lost.id for r in worker.store.sweep(prune=False).rescued), "rescue"
    )
    before = healthy.renewed_at
    assert LeaseKeeper(worker)._renew_leases()
    threads[0].join(timeout=30)
    assert not threads[0].is_alive(), "the attempt whose lease is gone was not stopped"
    assert doomed.current is None and doomed.child is None
    assert threads[1].is_alive(), "the attempt whose lease was renewed was stopped too"
    assert healthy.current is long and healthy.renewed_at > before
    assert healthy.child is not None and healthy.child.alive()
    assert worker.app.get_job(kept.id).state == "running"
    assert outcomes(worker, lost.id) == ["lost_lease"]  # the rescue, with the refused end
    assert outcomes(worker, kept.id) == [None]  # still running, on its renewed lease
    worker.shutdown.hand_back("the test is over")
    threads[1].join(timeout=30)
    assert not threads[1].is_alive(), "a hard stop did not stop the attempt"
    assert outcomes(worker, kept.id) == ["interrupted"]


def test_a_child_that_writes_what_is_not_a_message(make_worker: Callable[..., Worker]) -> None:
    """The child is not trusted further: killed, its attempt crashed and retried by its
    policy, not failed for good nor lost; the slot starts a new child for its next job."""
    worker = make_worker()
    garbled = worker.app.jobs["garble"].dispatch()
    slot = worker.slots[0]
    hand(slot, reserve(worker, lease=30), chain=False)
    child = slot.child
    assert child is not None
    assert slot.watch(child) is None
    assert child.proc.returncode is not None and slot.child is None and slot.current is None
    [attempt] = worker.app.get_job(garbled.id).attempts
    assert attempt.outcome == "crashed"
    assert "cannot read" in (attempt.error or "") and "garbage" in (attempt.error or "")
    assert worker.app.get_job(garbled.id).state not in ("failed", "running")
    assert slot.child_process().alive()  # a fresh child for what comes next

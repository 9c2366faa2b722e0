"""The worker's chores on a clock the test drives (huey's `loop(now)`): the fetch loop's pass,
the heartbeat, the lease guard and the sweeper's prune are decided from the time they are
given, so minutes of a worker's life pass here in no time, and no test sleeps.

Real parts: a SQLite store; the worker is not started (no slot thread, no child): the test
calls the steps its threads would call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tenure.app import App
from tenure.core.guards import Guards
from tenure.core.records import NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.settings import WorkerOptions
from tenure.testing import freeze
from tenure.worker.leases import PRUNE_EVERY_S, LeaseKeeper, Sweeper
from tenure.worker.supervisor import Then, Worker

DEAD = WorkerRef(id="w-dead", host="elsewhere", pid=1)
T0 = 1000.0  # any monotonic time: the steps read no clock of their own
PAYLOAD = '{"args":[],"kwargs":{}}'


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    app = App(f"sqlite:///{tmp_path / 't.db'}")

    @app.job(name="noop", queue="mine")
    def noop() -> None:
        pass

    @app.job(name="orphan", queue="elsewhere")
    def orphan() -> None:
        pass

    app.store.migrate()
    yield app
    app.close()


@pytest.fixture
def make_worker(app: App) -> Iterator[Callable[..., Worker]]:
    made: list[Worker] = []

    def make(**options: object) -> Worker:
        opts = WorkerOptions(app_spec="unused:app", queues=("mine",), **options)  # type: ignore[arg-type]
        made.append(Worker(app, opts))
        return made[-1]

    yield make
    for worker in made:
        worker.pulse.close()


def wait_until(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def test_max_time_stops_the_fetch_loop_at_its_limit(make_worker: Callable[..., Worker]) -> None:
    worker = make_worker(max_time=10.0)
    assert worker.fetch_once(T0) is Then.WAIT_FOR_WORK
    assert worker.fetch_once(T0 + 9.9) is Then.WAIT_FOR_WORK
    assert not worker.stopping.is_set()
    assert worker.fetch_once(T0 + 10.0) is Then.STOP
    assert worker.stopping.is_set() and "--max-time 10 s reached" in worker.shutdown.reason


def test_the_rescue_sweep_runs_on_the_first_pass_then_every_interval(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    worker = make_worker(lease=3.0)  # a sweep every lease/3: 1 s
    assert worker.fetch_once(T0) is Then.WAIT_FOR_WORK  # swept: nothing to rescue yet
    job = app.jobs["orphan"].dispatch()
    [held] = app.store.reserve(queues=["elsewhere"], worker=DEAD, lease=0.05, limit=1)
    wait_until(lambda: app.store.now() > held.lease_expires_at, "the dead worker's lease to end")
    worker.fetch_once(T0 + 0.999)  # not due: the expired lease waits for the next sweep
    assert app.get_job(job.id).state == "running"
    worker.fetch_once(T0 + 1.0)
    assert [a.outcome for a in app.get_job(job.id).attempts] == ["crashed"]


def test_a_crashed_holders_parked_jobs_are_handed_back_as_its_lease_lapses(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    """The sweep learns when the earliest lease lapses (Swept.next_lapse_in) and runs again
    then, not a sweep interval later: a crashed holder of a concurrency slot is rescued, and
    the job parked behind it handed back, within the holder's lease."""
    worker = make_worker(lease=30.0)  # a sweep every 5 s (lease/3, at most 5 s)
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    parked_jobs = [
        NewJob(f"lim{i}", "orphan", "elsewhere", PAYLOAD, Policy(), guards=limited)
        for i in range(2)
    ]
    app.store.enqueue_many(parked_jobs)
    [held] = app.store.reserve(queues=["elsewhere"], worker=DEAD, lease=0.3, limit=2)
    assert app.get_job("lim1").waiting_on == "k"  # parked behind the dead worker's slot
    assert worker.fetch_once(T0) is Then.WAIT_FOR_WORK  # swept: the lease lapses in 0.3 s
    wait_until(lambda: app.store.now() > held.lease_expires_at, "the dead worker's lease to end")
    worker.fetch_once(T0 + 0.4)  # a sweep is due at the lapse, 4.6 s before the interval's
    assert [a.outcome for a in app.get_job(held.job_id).attempts] == ["crashed"]
    assert app.get_job("lim1").waiting_on is None  # handed back: ready to run


def test_the_periodic_tick_rides_on_the_pass_s_clock_once_a_second(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    store_clock = freeze(app)  # each second of the store's clock is a due time

    @app.periodic("* * * * * *", name="beat", queue="elsewhere")  # a queue the worker leaves
    def beat() -> None: ...

    def runs() -> int:
        return len(app.list_jobs(queue="elsewhere"))

    worker = make_worker()
    worker.fetch_once(T0)  # the first look records the latest due time, runs nothing
    store_clock.advance(1)
    worker.fetch_once(T0 + 0.999)  # a due time came, but not a second of the loop's clock
    assert runs() == 0
    worker.fetch_once(T0 + 1.0)
    assert runs() == 1


def test_a_pass_with_every_slot_busy_waits_for_one(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    worker = make_worker(concurrency=1)
    first, second = app.jobs["noop"].dispatch(), app.jobs["noop"].dispatch()
    assert worker.fetch_once(T0) is Then.AGAIN  # reserved one: handed to the slot
    [slot] = worker.slots
    assert slot.current is not None and slot.current.job_id == first.id
    assert worker.fetch_once(T0) is Then.WAIT_FOR_SLOT
    assert app.get_job(second.id).state == "queued"
    worker.slot_freed(slot)
    assert worker.fetch_once(T0) is Then.AGAIN
    assert slot.current.job_id == second.id
    assert worker.fetch_once(T0) is Then.WAIT_FOR_SLOT


def test_max_jobs_stops_the_pass_that_reaches_it(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    worker = make_worker(max_jobs=1, concurrency=2)
    app.jobs["noop"].dispatch()
    app.jobs["noop"].dispatch()
    assert worker.fetch_once(T0) is Then.STOP
    assert "--max-jobs 1 reached" in worker.shutdown.reason
    assert sum(slot.current is not None for slot in worker.slots) == 1


def test_a_burst_worker_with_nothing_left_stops(make_worker: Callable[..., Worker]) -> None:
    worker = make_worker(burst=True)
    assert worker.fetch_once(T0) is Then.STOP
    assert "--burst: the queues are empty" in worker.shutdown.reason


def test_the_heartbeat_renews_every_third_of_the_lease(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    worker = make_worker(lease=30.0)
    app.jobs["noop"].dispatch()
    worker.fetch_once(T0)
    [slot] = worker.slots
    keeper = LeaseKeeper(worker, started=T0)
    keeper.heartbeat_once(T0 + 9.999)
    assert worker.metrics.lease_renewals == 0
    keeper.heartbeat_once(T0 + 10.0)
    assert worker.metrics.lease_renewals == 1
    keeper.heartbeat_once(T0 + 19.9)
    assert worker.metrics.lease_renewals == 1
    keeper.heartbeat_once(T0 + 25.0)  # late: the next beat counts from this one
    assert worker.metrics.lease_renewals == 2
    keeper.heartbeat_once(T0 + 34.9)
    assert worker.metrics.lease_renewals == 2
    keeper.heartbeat_once(T0 + 35.0)
    assert worker.metrics.lease_renewals == 3
    assert slot.lease_ok()


def test_the_guard_warns_at_half_the_lease_and_stops_the_attempt_at_four_fifths(
    app: App, make_worker: Callable[..., Worker]
) -> None:
    worker = make_worker(lease=10.0)
    app.jobs["noop"].dispatch()
    worker.fetch_once(T0)
    [slot] = worker.slots
    res = slot.current
    assert res is not None
    # the attempt began and its lease was last renewed then (the pass stamps the real
    # monotonic time, a lease's clock: on a machine up less than T0 s it lies far before T0)
    slot.started_at = slot.renewed_at = T0
    keeper = LeaseKeeper(worker, started=T0)
    keeper.guard_leases(T0 + 5.0)
    assert slot.lease_ok() and slot._problem(T0 + 5.0) is None
    keeper.guard_leases(T0 + 5.01)
    assert not slot.lease_ok() and slot._problem(T0 + 5.01) is None  # warned only
    keeper.guard_leases(T0 + 8.01)
    problem = slot._problem(T0 + 8.01)
    assert problem is not None and problem[:2] == (res, "lost_lease")
    assert "could not renew the lease for 8.0 s" in problem[2]


def test_the_sweeper_prunes_on_its_first_tick_then_every_ten_seconds(app: App) -> None:
    sweeper = Sweeper(app.store)
    sweeper.tick(T0)
    assert sweeper.next_prune == T0 + PRUNE_EVERY_S
    sweeper.tick(T0 + PRUNE_EVERY_S - 0.1)  # rescues only
    assert sweeper.next_prune == T0 + PRUNE_EVERY_S
    sweeper.tick(T0 + PRUNE_EVERY_S + 0.5)
    assert sweeper.next_prune == T0 + 2 * PRUNE_EVERY_S + 0.5

"""Retention: `sweep` prunes finished jobs (with their attempts, effects and guard rows) and
settled batches (with their members) once they are older than the retention each carries, on
the store's clock; never a live job, a member of a running batch, or a periodic job's latest
run; one bounded chunk per call; two sweepers at once delete each row once.

The windows are tiny (0 s: due as soon as the store's clock moves past the end) or long (an
hour), so no test moves a clock or sleeps: each waits on the condition it needs.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from conformance.helpers import W1, counts, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch, NewJob
from tenure.core.retention import Keep, Pruned
from tenure.core.retry import Policy
from tenure.stores import Store
from tenure.stores.base import get_batch, get_job

GONE_AT_ONCE = Keep(succeeded=0.0, failed=0.0)
AN_HOUR = Keep(succeeded=3600.0, failed=3600.0)
ONE_TRY = Policy(tries=1, backoff=0)


def kept(keep: Keep, **kwargs: object) -> NewJob:
    return replace(new_job(**kwargs), keep=keep)  # type: ignore[arg-type]


def run_to_success(store: Store, *job_ids: str, queue: str = "default") -> None:
    for _ in job_ids:
        res = reserve_one(store, queues=(queue,))
        assert res.job_id in job_ids
        assert store.end_attempt(Ending(job_id=res.job_id, token=res.token))[0].accepted


def sweep_until(store: Store, done: object, *, limit: int = 500, what: str) -> Pruned:
    """Sweep until `done()` holds; the sum of what was pruned meanwhile."""
    total = Pruned()

    def check() -> bool:
        nonlocal total
        total = total + store.sweep(limit=limit).pruned
        return bool(done())  # type: ignore[operator]

    wait_until(check, what=what)
    return total


def test_old_finished_jobs_go_with_their_attempts_and_effects(store: Store) -> None:
    old_ok, old_failed = kept(GONE_AT_ONCE), kept(GONE_AT_ONCE, policy=ONE_TRY)
    young = kept(AN_HOUR)
    enqueue(store, old_ok, old_failed, young)
    res = reserve_one(store)
    assert res.job_id == old_ok.id
    assert store.claim_once(job_id=res.job_id, token=res.token, key="charge")
    assert store.end_attempt(Ending(job_id=res.job_id, token=res.token))[0].accepted
    res = reserve_one(store)
    store.end_attempt(Ending(job_id=res.job_id, token=res.token, outcome="failed", error="boom"))
    assert job(store, old_failed.id).state == "failed"
    run_to_success(store, young.id)

    pruned = sweep_until(
        store,
        lambda: get_job(store, old_ok.id) is None and get_job(store, old_failed.id) is None,
        what="the two old jobs to be pruned",
    )
    assert (pruned.jobs, pruned.attempts, pruned.effects) == (2, 2, 1)
    assert job(store, young.id).state == "succeeded"
    assert counts(store)["succeeded"] == 1 and counts(store)["failed"] == 0


def test_live_jobs_are_never_pruned(store: Store) -> None:
    queued, running = kept(GONE_AT_ONCE), kept(GONE_AT_ONCE)
    scheduled = kept(GONE_AT_ONCE, delay=3600)
    enqueue(store, running, queued, scheduled)
    res = reserve_one(store)
    assert res.job_id == running.id
    t0 = store.now()
    wait_until(lambda: store.now() > t0 + 0.01, what="the store clock to move")
    for _ in range(3):
        assert store.sweep().pruned.jobs == 0
    assert [job(store, j.id).state for j in (running, queued, scheduled)] == [
        "running",
        "queued",
        "scheduled",
    ]


def test_a_settled_batch_goes_with_its_members(store: Store) -> None:
    # the members themselves would be kept forever: they go with their batch
    members = [new_job(batch_id="b-old"), new_job(batch_id="b-old")]
    store.enqueue_many(members, batch=NewBatch(id="b-old", name="old", keep=GONE_AT_ONCE))
    run_to_success(store, *(m.id for m in members))
    assert get_batch(store, "b-old").state == "succeeded"  # type: ignore[union-attr]
    assert {j.id for j in store.list_jobs(batch_id="b-old")} == {m.id for m in members}
    pruned = sweep_until(
        store, lambda: get_batch(store, "b-old") is None, what="the settled batch to be pruned"
    )
    assert pruned.batches == 1 and pruned.jobs == 2 and pruned.attempts == 2
    assert all(get_job(store, m.id) is None for m in members)
    assert [b.id for b in store.list_batches()] == []
    assert store.list_jobs(batch_id="b-old") == []  # its member list went with it


def test_a_running_batch_keeps_its_finished_members(store: Store) -> None:
    members = [kept(GONE_AT_ONCE, batch_id="b-run"), kept(GONE_AT_ONCE, batch_id="b-run")]
    store.enqueue_many(members, batch=NewBatch(id="b-run", name="run", keep=GONE_AT_ONCE))
    first = reserve_one(store)
    assert store.end_attempt(Ending(job_id=first.job_id, token=first.token))[0].accepted
    t0 = store.now()
    wait_until(lambda: store.now() > t0 + 0.01, what="the store clock to move")
    for _ in range(3):
        assert store.sweep().pruned == Pruned()
    assert job(store, first.job_id).state == "succeeded"
    assert get_batch(store, "b-run").state == "running"  # type: ignore[union-attr]


def test_the_latest_run_of_a_periodic_job_is_kept(store: Store) -> None:
    def claim(due: float) -> NewJob:
        run = replace(kept(GONE_AT_ONCE), id=f"p{int(due)}refresh")
        store.claim_periodic(name="refresh", queue="default", due=due, job=run)
        return run

    claim(1_800_000_000.0)  # recorded, no run
    older = claim(1_800_000_300.0)
    run_to_success(store, older.id)
    latest = claim(1_800_000_600.0)
    run_to_success(store, latest.id)
    sweep_until(store, lambda: get_job(store, older.id) is None, what="the older run to go")
    for _ in range(3):
        store.sweep()
    assert job(store, latest.id).state == "succeeded"
    assert store.list_periodic()[0].last_job_id == latest.id


def test_expired_guard_rows_are_pruned(store: Store) -> None:
    unique = replace(kept(AN_HOUR), guards=Guards(unique_key="send_invoice:42", unique_for=0.01))
    rated = replace(
        kept(AN_HOUR, queue="rated"),
        guards=Guards(rate_key="send_invoice", rate_limit=5, rate_window=0.01),
    )
    enqueue(store, unique, rated)
    reserve_one(store, queues=("rated",))  # records a start in the rate window
    t0 = store.now()
    wait_until(lambda: store.now() > t0 + 0.05, what="the guards to expire")
    sweep_until(
        store,
        lambda: store.sweep(dry_run=True).pruned.guards == 0,
        what="no expired guard row left",
    )
    # the job itself is young: kept, and its key (expired) no longer deduplicates
    assert job(store, unique.id).state == "queued"
    again = replace(unique, id="second")
    assert store.enqueue_many([again]) == ["second"]


def test_one_sweep_deletes_one_bounded_chunk(store: Store) -> None:
    jobs = [kept(GONE_AT_ONCE) for _ in range(7)]
    enqueue(store, *jobs)
    run_to_success(store, *(j.id for j in jobs))
    wait_until(lambda: store.sweep(dry_run=True).pruned.jobs == 7, what="all seven to be due")
    sizes = []
    while len(sizes) < 10:
        pruned = store.sweep(limit=3).pruned
        assert pruned.jobs <= 3
        sizes.append(pruned.jobs)
        if not pruned.more:
            break
    assert sum(sizes) == 7 and sizes[0] == 3
    assert counts(store)["succeeded"] == 0


def test_two_sweepers_at_once_delete_each_job_once(store: Store, other_store: Store) -> None:
    jobs = [kept(GONE_AT_ONCE) for _ in range(40)]
    enqueue(store, *jobs)
    res = store.reserve(queues=["default"], worker=W1, lease=30, limit=40)
    for r in res:
        assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
    wait_until(lambda: store.sweep(dry_run=True).pruned.jobs == 40, what="all forty to be due")
    deleted: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def sweeper(s: Store) -> None:
        try:
            start.wait(timeout=30)
            for _ in range(100):
                pruned = s.sweep(limit=4).pruned
                deleted.append(pruned.jobs)
                if not pruned.more and s.sweep(dry_run=True).pruned.jobs == 0:
                    return
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sweeper, args=(s,)) for s in (store, other_store)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sum(deleted) == 40
    assert counts(store)["succeeded"] == 0


def test_a_dry_run_counts_and_deletes_nothing(store: Store) -> None:
    jobs = [kept(GONE_AT_ONCE) for _ in range(3)]
    enqueue(store, *jobs)
    run_to_success(store, *(j.id for j in jobs))
    due = wait_until(
        lambda: (p := store.sweep(dry_run=True).pruned).jobs == 3 and p, what="three due"
    )
    assert due.attempts == 3
    assert all(job(store, j.id).state == "succeeded" for j in jobs)
    assert store.sweep().pruned.jobs == 3


def test_a_job_kept_forever_is_never_pruned(store: Store) -> None:
    forever = new_job()  # NewJob's default: no retention
    enqueue(store, forever)
    run_to_success(store, forever.id)
    t0 = store.now()
    wait_until(lambda: store.now() > t0 + 0.01, what="the store clock to move")
    assert store.sweep().pruned.jobs == 0
    assert job(store, forever.id).state == "succeeded"


def test_a_cancelled_job_is_kept_as_long_as_a_failed_one(store: Store) -> None:
    cancelled_old = kept(Keep(succeeded=3600.0, failed=0.0))
    cancelled_young = kept(Keep(succeeded=0.0, failed=3600.0))
    enqueue(store, cancelled_old, cancelled_young)
    store.cancel(cancelled_old.id)
    store.cancel(cancelled_young.id)
    sweep_until(
        store, lambda: get_job(store, cancelled_old.id) is None, what="the cancelled job to go"
    )
    assert job(store, cancelled_young.id).state == "cancelled"


def test_a_workers_sweeper_catches_up_beyond_one_ticks_budget(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More due than a tick's budget deletes: the sweeper goes on in a thread of its own, a
    chunk at a time, until nothing is due, and then stops."""
    from tenure.worker import leases

    monkeypatch.setattr(leases, "PRUNE_BUDGET_S", 0.0)  # a tick: one chunk, then the thread
    jobs = [kept(GONE_AT_ONCE) for _ in range(23)]
    enqueue(store, *jobs)
    run_to_success(store, *[j.id for j in jobs])
    wait_until(lambda: store.sweep(dry_run=True).pruned.jobs == 23, what="all 23 to be due")
    sweeper = leases.Sweeper(store, chunk=5)
    sweeper.tick()
    wait_until(lambda: counts(store)["succeeded"] == 0, timeout=30, what="all 23 pruned")
    wait_until(lambda: not sweeper.catching_up(), timeout=30, what="the catch-up to end")
    assert not sweeper.behind and store.sweep(dry_run=True).pruned.jobs == 0
    sweeper.tick()  # the pruned counts went to the log; nothing left to catch up on
    assert not sweeper.catching_up()


def test_a_stopped_sweeper_starts_no_catch_up(store: Store) -> None:
    from tenure.worker import leases

    jobs = [kept(GONE_AT_ONCE) for _ in range(6)]
    enqueue(store, *jobs)
    run_to_success(store, *[j.id for j in jobs])
    wait_until(lambda: store.sweep(dry_run=True).pruned.jobs == 6, what="all 6 to be due")
    sweeper = leases.Sweeper(store, chunk=1)
    sweeper.stop()
    sweeper.tick()  # the tick's own budget still prunes; no thread goes on after it
    assert not sweeper.catching_up()


def test_per_key_state_no_job_needs_is_pruned_and_live_keys_keep_theirs(store: Store) -> None:
    # fair keys, concurrency keys and a debounce key whose jobs have all finished
    gone_keys = [replace(kept(AN_HOUR), guards=Guards(fair_key=f"tenant{i}")) for i in range(5)]
    gone_keys += [
        replace(kept(AN_HOUR), guards=Guards(concurrency_key=f"acct{i}", concurrency_limit=1))
        for i in range(3)
    ]
    debounced = replace(kept(GONE_AT_ONCE), guards=Guards(debounce_key="doc:1"))
    enqueue(store, *gone_keys, debounced)
    run_to_success(store, *(j.id for j in gone_keys), debounced.id)
    # a live key: one attempt running, one job parked behind it
    live = [
        replace(
            kept(AN_HOUR, queue="live"),
            guards=Guards(concurrency_key="acct:live", concurrency_limit=1),
        )
        for _ in range(2)
    ]
    enqueue(store, *live)
    held = reserve_one(store, queues=("live",))
    assert store.reserve(queues=["live"], worker=W1, lease=30) == []  # parks the other
    t0 = store.now()
    wait_until(lambda: store.now() > t0 + 0.01, what="the debounced job's retention to pass")
    total = sweep_until(
        store,
        lambda: store.sweep(dry_run=True).pruned.guards == 0,
        what="no per-key row left that no job needs",
    )
    assert total.guards >= 5  # at least the five fair keys' turns
    assert store.sweep().pruned.guards == 0  # gone, not counted again
    # the live key still holds its limit and hands back its parked job
    assert store.reserve(queues=["live"], worker=W1, lease=30) == []
    assert store.end_attempt(Ending(job_id=held.job_id, token=held.token))[0].accepted
    assert [r.job_id for r in store.reserve(queues=["live"], worker=W1, lease=30)] == [live[1].id]
    # the keys that were pruned work as new ones: a limit of one, a fair turn, a debounce
    again = [
        replace(kept(AN_HOUR), guards=Guards(concurrency_key="acct0", concurrency_limit=1))
        for _ in range(2)
    ]
    fair_again = replace(kept(AN_HOUR), guards=Guards(fair_key="tenant0"))
    enqueue(store, *again, fair_again)
    got = [r.job_id for r in store.reserve(queues=["default"], worker=W1, lease=30, limit=5)]
    assert sorted(got) == sorted([again[0].id, fair_again.id])

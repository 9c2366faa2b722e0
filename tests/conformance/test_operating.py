"""What people and screens read and do: listings, counts, retry, forget, workers, restart."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conformance.helpers import W1, counts, enqueue, job, new_job, reserve_one, wait_until
from tenure.core.records import Ending, JobRecord, NewBatch, WorkerRecord
from tenure.core.retry import Policy
from tenure.core.states import JOB_STATES
from tenure.stores import Store
from tenure.stores.base import get_job

ONE_TRY = Policy(tries=1, backoff=0)


def make_one_of_each(store: Store) -> dict[str, str]:
    """A job in every state a store can hold without waiting: id by state."""
    queued, scheduled, running, succeeded, failed = (
        new_job(queue="a"),
        new_job(queue="b", delay=600),
        new_job(queue="a"),
        new_job(queue="b"),
        new_job(queue="a", policy=ONE_TRY),
    )
    store.enqueue_many([running])
    reserve_one(store, queues=["a"])
    store.enqueue_many([succeeded])
    done = reserve_one(store, queues=["b"])
    store.end_attempt(Ending(job_id=succeeded.id, token=done.token))
    store.enqueue_many([failed])
    bad = reserve_one(store, queues=["a"])
    store.end_attempt(Ending(job_id=failed.id, token=bad.token, outcome="failed", error="boom"))
    store.enqueue_many([queued, scheduled])
    return {
        "queued": queued.id,
        "scheduled": scheduled.id,
        "running": running.id,
        "succeeded": succeeded.id,
        "failed": failed.id,
    }


def test_counts_always_name_all_six_states(store: Store) -> None:
    assert counts(store) == dict.fromkeys(JOB_STATES, 0)


def test_counts_show_scheduled_apart_from_queued(store: Store) -> None:
    make_one_of_each(store)
    enqueue(store, new_job(), new_job())
    assert counts(store) == {
        "queued": 3,
        "scheduled": 1,
        "running": 1,
        "succeeded": 1,
        "failed": 1,
        "cancelled": 0,
    }


def test_list_jobs_filters_by_state_and_queue(store: Store) -> None:
    ids = make_one_of_each(store)
    for state, job_id in ids.items():
        listed = store.list_jobs(state=state)
        assert [j.id for j in listed] == [job_id], state
        assert listed[0].state == state
    assert store.list_jobs(state="cancelled") == []
    assert {j.id for j in store.list_jobs(queue="b")} == {ids["scheduled"], ids["succeeded"]}
    assert [j.id for j in store.list_jobs(state="failed", queue="a")] == [ids["failed"]]
    assert store.list_jobs(state="failed", queue="b") == []
    assert {j.id for j in store.list_jobs()} == set(ids.values())


def test_list_jobs_is_newest_first_limited_and_without_attempts(store: Store) -> None:
    ids = [enqueue(store, new_job())[0] for _ in range(4)]
    reserve_one(store)  # gives the oldest an attempt
    listed = store.list_jobs(limit=3)
    assert [j.id for j in listed] == ids[::-1][:3]
    assert all(j.attempts == [] for j in store.list_jobs())
    one_batch = enqueue(store, *[new_job() for _ in range(3)])
    assert [j.id for j in store.list_jobs(limit=3)] == one_batch[::-1]


def test_list_jobs_by_id_reads_each_with_its_attempts_in_the_order_asked(store: Store) -> None:
    ids = make_one_of_each(store)
    asked = [ids["failed"], "no-such-job", ids["queued"], ids["succeeded"], ids["failed"]]
    listed = store.list_jobs(ids=asked, state="running", limit=1)  # ids decide alone
    assert [j.id for j in listed] == [ids["failed"], ids["queued"], ids["succeeded"]]
    assert [[a.outcome for a in j.attempts] for j in listed] == [["failed"], [], ["succeeded"]]
    assert store.list_jobs(ids=[]) == []
    assert get_job(store, "no-such-job") is None


def test_a_listing_shows_what_the_job_read_alone_shows_after_several_attempts(
    store: Store,
) -> None:
    """A listing reads less of each job than `get_job` (no history): every field its records
    carry must still be the one the job's own page shows, for jobs that ended attempts."""
    three = Policy(tries=3, backoff=0)
    failed, succeeded, running, retrying = (
        new_job(queue="a", policy=three),
        new_job(queue="a", policy=three),
        new_job(queue="b", policy=three),
        new_job(queue="c", policy=three),
    )
    member = new_job(queue="a", policy=three, batch_id="b-listed")
    trace = "Traceback (most recent call last):\n" + "  frame\n" * 200

    def fail(job_id: str, queue: str, times: int) -> None:
        # one job in its queue at a time: a retry at once goes behind the queue's others
        for n in range(times):
            got = reserve_one(store, queues=[queue])
            assert got.job_id == job_id
            store.end_attempt(Ending(job_id, got.token, "failed", error=f"E{n}", traceback=trace))

    store.enqueue_many([member], batch=NewBatch(id="b-listed", name="n", total=1))
    fail(member.id, "a", 3)
    for one, times in ((failed, 3), (succeeded, 2), (running, 2), (retrying, 1)):
        enqueue(store, one)
        fail(one.id, one.queue, times)
    ok = reserve_one(store, queues=["a"])
    assert ok.job_id == succeeded.id
    store.end_attempt(Ending(succeeded.id, ok.token, result='{"total": 3}'))
    assert reserve_one(store, queues=["b"]).job_id == running.id  # its third attempt, open

    def summary(record: JobRecord) -> JobRecord:
        return replace(record, attempts=[], effects=[])

    listed = store.list_jobs() + store.list_jobs(batch_id="b-listed")
    assert len(listed) == 6  # the batch's member twice
    for record in listed:
        alone = job(store, record.id)
        assert len(alone.attempts) >= 2 or record.id == retrying.id
        assert summary(record) == summary(alone), record.id
    assert {r.id: r.state for r in store.list_jobs(state="failed")} == {
        failed.id: "failed",
        member.id: "failed",
    }
    last = [r.last_error or "" for r in store.list_jobs(state="failed", queue="a")]
    assert [error.startswith("E2") for error in last] == [True, True], last


def test_retry_job_puts_a_failed_job_back_with_fresh_tries(store: Store) -> None:
    ids = make_one_of_each(store)
    failed = ids["failed"]
    before = job(store, failed)
    assert (before.tries_used, before.exceptions) == (1, 1)
    assert store.retry_job(failed)
    got = job(store, failed)
    assert got.state == "queued"
    assert got.finished_at is None
    assert (got.tries_used, got.exceptions) == (0, 0)
    handed = store.reserve(queues=["a"], worker=W1, lease=30, limit=5)
    (again,) = [r for r in handed if r.job_id == failed]
    assert again.attempt == 2  # the fencing token never goes back
    assert store.end_attempt(Ending(job_id=failed, token=again.token))[0].accepted
    assert [a.outcome for a in job(store, failed).attempts] == ["failed", "succeeded"]


def test_retry_job_refuses_anything_but_a_failed_job(store: Store) -> None:
    ids = make_one_of_each(store)
    for state in ("queued", "scheduled", "running", "succeeded"):
        assert not store.retry_job(ids[state]), state
        assert job(store, ids[state]).state == state
    assert not store.retry_job("no-such-job")


def test_forget_job_deletes_only_finished_jobs(store: Store) -> None:
    ids = make_one_of_each(store)
    for state in ("queued", "scheduled", "running"):
        assert not store.forget_job(ids[state]), state
        assert job(store, ids[state]).state == state
    for state in ("succeeded", "failed"):
        assert store.forget_job(ids[state]), state
        assert get_job(store, ids[state]) is None
        assert not store.forget_job(ids[state])
    assert not store.forget_job("no-such-job")
    assert counts(store)["succeeded"] == counts(store)["failed"] == 0


def record(worker_id: str, *, queues: tuple[str, ...] = ("default",)) -> WorkerRecord:
    return WorkerRecord(
        id=worker_id,
        host="host-a",
        pid=4242,
        queues=queues,
        concurrency=4,
        started_at=0.0,  # the store stamps its own clock
        last_seen_at=0.0,
    )


def test_workers_register_list_and_stop(store: Store) -> None:
    assert store.list_workers() == []
    before = store.now()
    store.heartbeat(worker=record("w-old", queues=("mail", "default")))
    # newest first by start time; let the store clock tick so the two cannot tie
    first_start = store.list_workers()[0].started_at
    wait_until(lambda: store.now() > first_start + 0.002, what="the store clock to move")
    store.heartbeat(worker=record("w-new"))
    workers = store.list_workers()
    assert [w.id for w in workers] == ["w-new", "w-old"]
    old = workers[1]
    assert (old.host, old.pid, old.queues, old.concurrency) == (
        "host-a",
        4242,
        ("mail", "default"),
        4,
    )
    assert old.started_at >= before - 0.01 and old.last_seen_at >= before - 0.01
    assert old.stopped_at is None

    store.heartbeat(worker=replace(record("w-old"), stopped_at=0.0))  # the store stamps it
    stopped = {w.id: w for w in store.list_workers()}
    assert stopped["w-old"].stopped_at is not None
    assert stopped["w-old"].stopped_at >= old.started_at
    assert stopped["w-new"].stopped_at is None

    store.heartbeat(worker=record("w-old"))  # the same id starting again
    again = {w.id: w for w in store.list_workers()}
    assert again["w-old"].stopped_at is None
    assert again["w-old"].queues == ("default",)
    store.heartbeat(worker=replace(record("never-registered"), stopped_at=0.0))  # harmless
    assert "never-registered" not in {w.id for w in store.list_workers()}


def test_a_worker_reports_the_job_names_it_knows(store: Store) -> None:
    """Rolling deploys: each worker's row holds the job names its code defines (stored text
    read back literally); a record without them (older code) reads as not reported."""
    names = ("mail.send", "report:build", 'naïve "quoted" name')
    store.heartbeat(worker=replace(record("w-new"), known=names))
    store.heartbeat(worker=record("w-old"))
    workers = {w.id: w for w in store.list_workers()}
    assert workers["w-new"].known == names
    assert workers["w-old"].known is None
    store.heartbeat(worker=record("w-new"))  # the same id starting again, with older code
    assert {w.id: w for w in store.list_workers()}["w-new"].known is None
    store.heartbeat(worker=replace(record("w-none"), known=()))  # an app with no jobs at all
    assert {w.id: w for w in store.list_workers()}["w-none"].known == ()


def test_a_heartbeat_with_the_workers_record_registers_it_and_replies(store: Store) -> None:
    at = store.set_control(restart=True)
    reply = store.heartbeat(worker=record(W1.id))
    assert reply.lost == [] and reply.cancel == []
    assert reply.restart_requested_at == pytest.approx(at, abs=1e-6)
    (seen,) = store.list_workers()
    assert (seen.id, seen.stopped_at) == (W1.id, None)
    assert seen.last_seen_at >= seen.started_at


def test_heartbeat_marks_the_worker_seen(store: Store) -> None:
    store.heartbeat(worker=record(W1.id))
    first = store.list_workers()[0].last_seen_at
    store.heartbeat(worker=W1, leases=[], lease=30)
    assert store.list_workers()[0].last_seen_at >= first


def test_restart_requests_are_stamped_with_the_store_clock(store: Store) -> None:
    def told() -> float | None:  # what a worker's heartbeat hears
        return store.heartbeat(worker=W1, leases=[], lease=30).restart_requested_at

    assert told() is None
    before = store.now()
    at = store.set_control(restart=True)
    assert at >= before - 0.01
    assert at <= store.now() + 0.01
    assert told() == pytest.approx(at, abs=1e-6)
    later = store.set_control(restart=True)
    assert later >= at
    assert told() == pytest.approx(later, abs=1e-6)

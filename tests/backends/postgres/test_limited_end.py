"""The end of a job under a concurrency limit on PostgreSQL (stores/postgres/limited.py): one
statement that gives the slot to the ender's next claim, and the rule it relies on, that every
parking of a job writes its key's row."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg

from backends.postgres.kit import PostgresKit
from conformance.helpers import W1, W2, job, new_job
from tenure.core.guards import Guards
from tenure.core.records import Ending, EndResult, NewJob, Reservation
from tenure.stores import Store
from tenure.stores.postgres.limited import LIMITED_END_AND_CLAIM_LEAN, LIMITED_END_AND_CLAIM_PASS


def limited(key: str, limit: int, **guards: Any) -> NewJob:
    return replace(new_job(), guards=Guards(concurrency_key=key, concurrency_limit=limit, **guards))


def key_row(store: Store, key: str) -> tuple[int, str]:
    """(running, xmin) of the key's slot row: xmin changes with every write of the row."""
    db: Any = store.db  # type: ignore[attr-defined]
    with db.cursor() as cur:
        row = cur.execute(
            db.q("SELECT running, xmin::text AS v FROM {s}.tenure_concurrency WHERE key = %s"),
            (key,),
        ).fetchone()
    return int(row["running"]), str(row["v"])


def texts_sent(fn: Any) -> list[str]:
    """The statements the store sends while fn() runs."""
    execute = psycopg.Cursor.execute
    texts: list[str] = []

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        texts.append(str(query))
        return execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        fn()
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    return texts


def sent_by(fn: Any) -> int:
    """How many statements the store sends while fn() runs."""
    return len(texts_sent(fn))


def in_store(store: Store, text: str) -> str:
    return str(store.db.q(text))  # type: ignore[attr-defined]


def end_and_claim(store: Store, attempt: Reservation) -> tuple[EndResult, Reservation | None]:
    """End the attempt and claim W1's next job of the default queue in the same call: the
    limited end under test."""
    return store.end_attempt(
        Ending(job_id=attempt.job_id, token=attempt.token),
        queues=["default"],
        worker=W1,
        lease=30,
    )


def end_and_claim_counted(
    store: Store, attempt: Reservation
) -> tuple[int, tuple[EndResult, Reservation | None]]:
    """end_and_claim, and how many statements it sent."""
    out: list[tuple[EndResult, Reservation | None]] = []
    sent = sent_by(lambda: out.append(end_and_claim(store, attempt)))
    [result] = out
    return sent, result


def hold_and_park(store: Store, jobs: list[NewJob]) -> Reservation:
    """The jobs of one key enqueued; W1 holds the key's one slot and W2's reserve parks the rest."""
    store.enqueue_many(jobs)
    [held] = store.reserve(queues=["default"], worker=W1, lease=30)
    assert store.reserve(queues=["default"], worker=W2, lease=30) == []  # parks the rest
    return held


def test_a_saturated_keys_end_hands_its_oldest_parked_job_to_the_ender_in_one_statement(
    store: Store,
) -> None:
    jobs = [limited("k", 1) for _ in range(3)]
    r = hold_and_park(store, jobs)
    assert job(store, jobs[1].id).waiting_on == "k"
    sent, (ended, nxt) = end_and_claim_counted(store, r)
    assert sent == 1
    assert ended.accepted and nxt is not None and nxt.job_id == jobs[1].id  # FIFO
    assert job(store, jobs[2].id).waiting_on == "k"  # the one slot is taken again
    assert key_row(store, "k")[0] == 1


def test_a_slot_passed_straight_to_the_enders_claim_leaves_the_keys_row_unwritten(
    store: Store,
) -> None:
    """The end's claim takes a job of the ended attempt's own key: the slot passes from one to
    the other, the count is unchanged, and the key's row is not written (its xmin stays). A
    claim of another key's job, or none, writes it."""
    jobs = [limited("k", 2) for _ in range(4)]
    store.enqueue_many(jobs)
    first, second = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    running, version = key_row(store, "k")
    assert running == 2
    ended, nxt = end_and_claim(store, first)
    assert ended.accepted and nxt is not None and nxt.job_id == jobs[2].id
    assert key_row(store, "k") == (2, version)  # passed: unwritten
    # the last job of the key passes too; then an end with nothing left to claim frees a slot
    _, last = end_and_claim(store, second)
    assert last is not None and last.job_id == jobs[3].id
    assert key_row(store, "k") == (2, version)
    _, none = end_and_claim(store, nxt)
    assert none is None
    running, later = key_row(store, "k")
    assert (running, later != version) == (1, True)
    store.end_attempt(Ending(job_id=last.job_id, token=last.token))
    assert key_row(store, "k")[0] == 0


def test_a_parked_job_the_head_comes_before_is_read_not_locked(store: Store) -> None:
    """The end reads the key's oldest parked job to compare it with the queue's head; when the
    head comes first (queued before the parked job was handed back would be), the parked job
    stays parked and its row is not locked (its xmax unchanged, no WAL record): a saturated
    key's backlog is read by every end."""
    first, parked = limited("k", 1), limited("k", 1)
    r = hold_and_park(store, [first, parked])
    db: Any = store.db  # type: ignore[attr-defined]

    def locker() -> str:  # xmax: the last transaction that locked or updated the row
        with db.cursor() as cur:
            row = cur.execute(
                db.q("SELECT xmax::text AS x FROM {s}.tenure_jobs WHERE id = %s"), (parked.id,)
            ).fetchone()
        return str(row["x"])

    before = locker()  # the parking's own
    head = limited("k", 1)
    store.enqueue_many([head])  # ready, and older than a hand-back at the end's now
    ended, nxt = end_and_claim(store, r)
    assert ended.accepted and nxt is not None and nxt.job_id == head.id
    assert job(store, parked.id).waiting_on == "k"
    assert locker() == before


def test_a_job_parked_by_the_slow_path_writes_its_keys_row(store: Store, kit: PostgresKit) -> None:
    """A rate-limited job of a concurrency key is judged by `reserve`'s slow path
    (guards.take_slot); parking it there must write the key's row, or an ending in one
    statement whose snapshot predates the parking could miss the parked job."""
    rate = {"rate_key": "r", "rate_limit": 100, "rate_window": 60.0}
    first, second = limited("k", 1, **rate), limited("k", 1, **rate)
    store.enqueue_many([first])
    [r] = store.reserve(queues=["default"], worker=W1, lease=30)
    store.enqueue_many([second])
    _, before = key_row(store, "k")
    assert store.reserve(queues=["default"], worker=W2, lease=30) == []
    assert job(store, second.id).waiting_on == "k"
    running, after = key_row(store, "k")
    assert running == 1 and after != before
    ended, _ = store.end_attempt(Ending(job_id=r.job_id, token=r.token))
    assert ended.accepted
    assert [x.job_id for x in store.reserve(queues=["default"], worker=W2, lease=30)] == [second.id]


def test_an_ends_claim_of_a_key_without_a_row_makes_the_row_in_the_same_statement(
    store: Store,
) -> None:
    """The next job's key has no slot row yet (its first job): the end's one statement makes
    the row, holding the claim's slot, rather than leaving the job to `reserve`'s slow path.
    Two statements: the common case's (LIMITED_END_AND_CLAIM_LEAN) finds a case it does not
    settle and writes nothing, then the full one."""
    first, other = limited("k1", 1), limited("k2", 1)
    store.enqueue_many([first, other])
    [r] = store.reserve(queues=["default"], worker=W1, lease=30, limit=1)
    sent, (ended, nxt) = end_and_claim_counted(store, r)
    assert sent == 2
    assert ended.accepted and nxt is not None and nxt.job_id == other.id
    assert key_row(store, "k2")[0] == 1 and key_row(store, "k1")[0] == 0


def test_an_ends_claim_of_another_keys_free_slot_takes_one_statement(store: Store) -> None:
    """The per-key drain's common case: nothing of the ended key parked, the next job's key
    has a row with a free slot. The common case's statement settles it alone: the slot
    given back, the other key's taken, nothing parked, nothing handed back."""
    first, other = limited("k1", 1), limited("k2", 1)
    store.enqueue_many([other])
    [o] = store.reserve(queues=["default"], worker=W1, lease=30)
    store.end_attempt(Ending(job_id=o.job_id, token=o.token))  # k2's row exists, free
    nxt_job = limited("k2", 1)
    store.enqueue_many([first])
    [r] = store.reserve(queues=["default"], worker=W1, lease=30, limit=1)
    store.enqueue_many([nxt_job])
    sent, (ended, nxt) = end_and_claim_counted(store, r)
    assert sent == 1
    assert ended.accepted and nxt is not None and nxt.job_id == nxt_job.id
    assert key_row(store, "k2")[0] == 1 and key_row(store, "k1")[0] == 0
    # the slot is the key's like any other: a second job of k2 waits for it
    later = limited("k2", 1)
    store.enqueue_many([later])
    assert store.reserve(queues=["default"], worker=W2, lease=30) == []
    store.end_attempt(Ending(job_id=nxt.job_id, token=nxt.token))
    assert [x.job_id for x in store.reserve(queues=["default"], worker=W2, lease=30)] == [later.id]


def test_an_attempt_a_slot_passed_to_ends_by_the_passing_statement(store: Store) -> None:
    """A saturated key's backlog: the attempt the ended one's slot passed to ends by
    LIMITED_END_AND_CLAIM_PASS alone (no other key's row), passing the slot on again. When the
    key's backlog is gone that guess is wrong: the passing statement writes nothing and the
    common case's settles the end, giving the slot back."""
    jobs = [limited("k", 2) for _ in range(4)]
    store.enqueue_many(jobs)
    first, second = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    out: list[Any] = []

    def end(r: Any) -> None:
        out.append(
            store.end_attempt(
                Ending(job_id=r.job_id, token=r.token), queues=["default"], worker=W1, lease=30
            )
        )

    # claimed by `reserve`: the common case's statement, which passes the slot to jobs[2]
    lean, passing = (
        in_store(store, LIMITED_END_AND_CLAIM_LEAN),
        in_store(store, LIMITED_END_AND_CLAIM_PASS),
    )
    assert texts_sent(lambda: end(first)) == [lean]
    _, passed_to = out[-1]
    assert passed_to is not None and passed_to.job_id == jobs[2].id
    assert texts_sent(lambda: end(passed_to)) == [passing]
    ended, nxt = out[-1]
    assert ended.accepted and nxt is not None and nxt.job_id == jobs[3].id
    assert key_row(store, "k")[0] == 2
    # nothing left to pass to: the passing statement finds no pass, the lean one ends it
    assert texts_sent(lambda: end(nxt)) == [passing, lean]
    ended, none = out[-1]
    assert ended.accepted and none is None
    assert job(store, jobs[3].id).state == "succeeded"
    assert key_row(store, "k")[0] == 1
    store.end_attempt(Ending(job_id=second.job_id, token=second.token))
    assert key_row(store, "k")[0] == 0

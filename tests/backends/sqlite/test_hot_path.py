"""A busy SQLite worker's hot path: a success recorded and the next job claimed in one write
transaction of the statements the engine's own guaranteed loop needs (bench/raw_loops.py),
and a damaged row on the way still fails alone, without the success or the next job lost."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from conformance.helpers import W1, enqueue, job, new_job, reserve_one
from tenure.core.guards import Guards
from tenure.core.records import Ending, EndResult, Reservation
from tenure.stores.sqlite import SQLiteStore
from tenure.stores.sqlite.database import CLOCK_SQL, sqlite_now

# A success that claims the next job in one transaction: the success, its attempt closed, the
# head read, the claim and its attempt row.
SEVEN_STATEMENTS = [
    "BEGIN IMMEDIATE",
    "UPDATE tenure_jobs",
    "UPDATE tenure_attempts",
    "SELECT id,",
    "UPDATE tenure_jobs",
    "INSERT INTO",
    "COMMIT",
]


def test_a_success_and_the_next_claim_are_the_raw_loops_seven_statements(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'hot.db'}")
    enqueue(store, new_job(), new_job())
    held = reserve_one(store)
    seen: list[str] = []
    store.db.conn().set_trace_callback(seen.append)
    ended, following = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=W1, lease=30
    )
    store.db.conn().set_trace_callback(None)
    assert ended.accepted and following is not None
    verbs = [" ".join(s.split()[:2]) for s in seen]
    # begin; success fenced; its attempt closed; the head of the queue; the claim; the new
    # attempt row; commit -- no clock read, no savepoint
    assert verbs == SEVEN_STATEMENTS, seen
    assert job(store, held.job_id).state == "succeeded"
    assert job(store, following.job_id).attempts[0].outcome is None


def _traced_end(
    store: SQLiteStore, held: Reservation
) -> tuple[list[str], EndResult, Reservation | None]:
    """end_attempt of `held`'s success, claiming the next job, and the statements it ran."""
    seen: list[str] = []
    store.db.conn().set_trace_callback(seen.append)
    ended, following = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token),
        queues=["default"],
        worker=W1,
        lease=30,
    )
    store.db.conn().set_trace_callback(None)
    return seen, ended, following


def test_a_plain_jobs_success_and_the_next_claim_run_no_returning(tmp_path: Path) -> None:
    # SQLite runs a RETURNING as a trigger program over an ephemeral table: ~40,000
    # instructions a statement (bench/row_shape.py), which a plain job has no use for
    store = SQLiteStore(f"sqlite:///{tmp_path / 'plain.db'}")
    enqueue(store, new_job(), new_job(payload='{"args":[7],"kwargs":{}}'))
    held = reserve_one(store)
    seen, ended, following = _traced_end(store, held)
    assert ended.accepted and following is not None
    assert not [s for s in seen if "RETURNING" in s], seen
    stored = job(store, following.job_id)
    # the claim handed out what the row holds, its attempt row opened under the same number
    assert following.payload == '{"args":[7],"kwargs":{}}'
    assert following.token == 1
    assert [a.number for a in stored.attempts] == [1] and stored.worker_id == W1.id
    assert stored.lease_expires_at == following.lease_expires_at


def test_a_limited_jobs_success_still_frees_its_slot_for_a_parked_one(tmp_path: Path) -> None:
    # the quiet twin: the store remembers the key a job was claimed under, its success is
    # fenced by that key too (no RETURNING), and the slot goes to the key's parked job
    store = SQLiteStore(f"sqlite:///{tmp_path / 'limited.db'}")
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    first, second = (replace(new_job(), guards=limited) for _ in range(2))
    enqueue(store, first, second)
    held = reserve_one(store)
    # the second is parked behind the key's one slot
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []
    seen, ended, following = _traced_end(store, held)
    assert ended.accepted
    assert not [s for s in seen if "RETURNING" in s], seen
    assert job(store, held.job_id).state == "succeeded"
    assert following is not None and following.job_id == second.id


def test_a_limited_jobs_success_unknown_to_this_store_is_read_back(tmp_path: Path) -> None:
    # claimed by another process (another store object here): no hint, so the success
    # takes COMPLETE's RETURNING, and the parked job still gets the slot
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    store, other = SQLiteStore(url), SQLiteStore(url)
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    first, second = (replace(new_job(), guards=limited) for _ in range(2))
    enqueue(store, first, second)
    held = reserve_one(other)
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []
    seen, ended, following = _traced_end(store, held)
    assert ended.accepted
    assert [s for s in seen if "RETURNING batch_id" in s], seen
    assert following is not None and following.job_id == second.id


def test_a_limited_backlog_hands_its_slot_on_in_the_plain_jobs_seven_statements(
    tmp_path: Path,
) -> None:
    # a success under a key whose next job takes the freed slot in the same transaction:
    # the key's free slots are what they were, nothing to hand back, no extra statement
    store = SQLiteStore(f"sqlite:///{tmp_path / 'backlog.db'}")
    limited = Guards(concurrency_key="k", concurrency_limit=2)
    enqueue(store, *(replace(new_job(), guards=limited) for _ in range(5)))
    held = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    assert len(held) == 2
    seen, ended, following = _traced_end(store, held[0])
    assert ended.accepted and following is not None
    assert [" ".join(s.split()[:2]) for s in seen] == SEVEN_STATEMENTS, seen
    running = [j for j in (job(store, r.job_id) for r in (held[1], following))]
    assert [j.state for j in running] == ["running", "running"]
    # still two at most: the next end's claim under the full key parks, takes none
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []


def test_a_stale_tokens_success_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'stale.db'}")
    enqueue(store, new_job())
    held = reserve_one(store)
    ended, _ = store.end_attempt(Ending(job_id=held.job_id, token=held.token + 1))
    assert not ended.accepted
    assert job(store, held.job_id).state == "running"


def test_a_damaged_row_met_by_the_claim_fails_alone_and_the_success_stays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.db"
    store = SQLiteStore(f"sqlite:///{path}")
    (first,) = enqueue(store, new_job())
    held = reserve_one(store)
    bad, good = enqueue(store, new_job(), new_job())
    with sqlite3.connect(path) as conn:  # a rate guard whose numbers are not numbers
        conn.execute(
            "UPDATE tenure_jobs SET rate_key = 'k', rate_limit = 'many', rate_window = 'x'"
            " WHERE id = ?",
            (bad,),
        )
    ended, following = store.end_attempt(
        Ending(job_id=first, token=held.token), queues=["default"], worker=W1, lease=30
    )
    assert ended.accepted and ended.state == "succeeded"
    assert following is not None and following.job_id == good
    assert job(store, first).state == "succeeded"
    damaged = job(store, bad)
    assert damaged.state == "failed"
    assert "could not start this job, its row is damaged" in (damaged.last_error or "")
    assert job(store, good).state == "running"


def test_the_clock_read_in_python_is_sqlites_own_now(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "clock.db")
    for _ in range(2000):
        before = sqlite_now()
        stored = conn.execute(f"SELECT {CLOCK_SQL}").fetchone()[0]
        after = sqlite_now()
        # the same clock, cut to the same millisecond by the same arithmetic
        assert before <= stored <= after
    conn.close()


def test_a_full_keys_head_met_by_the_hot_claim_is_parked_and_the_next_job_taken(
    tmp_path: Path,
) -> None:
    # no head-of-line blocking on the busy worker's path: the head's key has no free slot,
    # so it waits parked (no attempt, no try) and the job behind it is claimed
    store = SQLiteStore(f"sqlite:///{tmp_path / 'full.db'}")
    limited = Guards(concurrency_key="k", concurrency_limit=1)
    (plain_first,) = enqueue(store, new_job())
    holder, waiting = (replace(new_job(), guards=limited) for _ in range(2))
    enqueue(store, holder, waiting)
    (behind,) = enqueue(store, new_job())
    first, held = store.reserve(queues=["default"], worker=W1, lease=30, limit=2)
    assert (first.job_id, held.job_id) == (plain_first, holder.id)
    seen, ended, following = _traced_end(store, first)
    assert ended.accepted and following is not None and following.job_id == behind
    assert not [s for s in seen if "SAVEPOINT" in s], seen  # the hot path, not the careful one
    parked = job(store, waiting.id)
    assert parked.state == "queued" and parked.attempts == []
    assert store.queue_counts()["default"].waiting == 1
    # the holder's end hands the slot on: the parked job is its next
    ended, following = store.end_attempt(
        Ending(job_id=held.job_id, token=held.token), queues=["default"], worker=W1, lease=30
    )
    assert ended.accepted and following is not None and following.job_id == waiting.id


def test_a_keys_success_whose_next_claim_takes_another_key_hands_back_only_what_is_parked(
    tmp_path: Path,
) -> None:
    # per key: the head read after the success says whether its key has a parked job;
    # none, so no hand-back statement, and the key's slot is free for its next job at once
    store = SQLiteStore(f"sqlite:///{tmp_path / 'keys.db'}")
    a, b = (Guards(concurrency_key=k, concurrency_limit=1) for k in "ab")
    (a1,) = enqueue(store, replace(new_job(), guards=a))
    (b1,) = enqueue(store, replace(new_job(), guards=b))
    held = reserve_one(store)
    assert held.job_id == a1
    seen, ended, following = _traced_end(store, held)
    assert ended.accepted and following is not None and following.job_id == b1
    assert [" ".join(s.split()[:2]) for s in seen] == SEVEN_STATEMENTS, seen
    (a2,) = enqueue(store, replace(new_job(), guards=a))
    assert reserve_one(store).job_id == a2


def test_a_keys_success_whose_next_claim_takes_another_key_wakes_its_parked_job(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'woken.db'}")
    a, b = (Guards(concurrency_key=k, concurrency_limit=1) for k in "ab")
    a1, a2 = (replace(new_job(), guards=a) for _ in range(2))
    enqueue(store, a1, a2)
    held = reserve_one(store)
    assert store.reserve(queues=["default"], worker=W1, lease=30) == []  # a2 parked
    (b1,) = enqueue(store, replace(new_job(), guards=b))
    seen, ended, following = _traced_end(store, held)
    assert ended.accepted and following is not None and following.job_id == b1
    # the head read said a2 was parked: the hand-back ran, and a2 is queued again
    assert [s for s in seen if s.startswith("UPDATE tenure_jobs SET run_at")], seen
    assert store.queue_counts()["default"].waiting == 0
    assert reserve_one(store).job_id == a2.id

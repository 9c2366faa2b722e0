"""SQLite's indexes on tenure_jobs and the plans that read them (migration 0008): a finished
job is in as few B-trees as possible, so that ending it and pruning it cost the one writer
little, and every statement the store runs still finds its rows by key or by an index range.
SQLite keeps no statistics and uses a partial index only when the statement names the
index's own condition: a statement that stops naming it turns silently into a scan."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace
from pathlib import Path

from conformance.helpers import W1, W2, new_job, wait_until
from tenure.core import chains
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewBatch
from tenure.core.retention import Keep
from tenure.stores.sqlite import SQLiteStore

DUE = Keep(succeeded=0.0, failed=0.0)
# Scans of tenure_jobs that are the statement's nature: the counts read every job (each
# state from the index that holds it, migrations 0013, 0015 and 0017: the queued ones from the
# ready index, the succeeded ones from retention's succeeded index, the failed and cancelled
# ones from the state index, which holds nothing else), a listing without a state reads the
# table.
SCANS = {
    "SELECT queue, ? AS state, count(*)": (
        "SCAN tenure_jobs USING COVERING INDEX tenure_jobs_ready_by_priority",
    ),
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND queue = ?": ("SCAN tenure_jobs",),
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? ORDER BY": ("SCAN tenure_jobs",),
    # ready or scheduled jobs of every queue: the ready index holds the queued ones only
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND state = ? AND run_at <= ? ORDER": (
        "SCAN tenure_jobs USING INDEX tenure_jobs_ready_by_priority",
    ),
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND state = ? AND run_at > ? ORDER": (
        "SCAN tenure_jobs USING INDEX tenure_jobs_ready_by_priority",
    ),
}
# The statements of the hot path and of maintenance, and the index each must take.
EXPECTED = {
    "FROM tenure_jobs INDEXED BY tenure_jobs_ready_by_priority": (
        "tenure_jobs_ready_by_priority (queue=? AND state=?)"
    ),
    "WHERE state = ? AND lease_expires_at < ?": (
        "tenure_jobs_lease (state=? AND lease_expires_at<?)"
    ),
    # a key's running attempts with a live lease, counted by a claim (migration 0016; the
    # guard indexes read guard_state since 0018)
    "SELECT count(*) FROM tenure_jobs WHERE concurrency_key = ? AND guard_state = ? AND +": (
        "COVERING INDEX tenure_jobs_slots (concurrency_key=? AND guard_state=?)"
    ),
    # an end hands back its key's oldest parked jobs
    "SELECT id FROM tenure_jobs WHERE concurrency_key = ? AND guard_state = ? AND run_at >= ?": (
        "tenure_jobs_parked (concurrency_key=? AND run_at>?)"
    ),
    # the counts per concurrency key: its running and its parked jobs
    "SELECT queue, key, max(lim) AS lim": "tenure_jobs_parked (concurrency_key>?)",
    # since migration 0017 one ready index: a queue's priorities in use, one seek each (a
    # loose index scan), then per priority: scheduled, and parked by a concurrency key
    # (run_at from states.PARKED_AT on); the head (fair share, the oldest queued job)
    "AND priority > p.pr)": (
        "COVERING INDEX tenure_jobs_ready_by_priority (queue=? AND state=? AND priority>?)"
    ),
    "AND priority = p.pr AND run_at > ? AND run_at < ?": (
        "COVERING INDEX tenure_jobs_ready_by_priority"
        " (queue=? AND state=? AND priority=? AND run_at>? AND run_at<?)"
    ),
    "AND priority = p.pr AND run_at < ?)) AS head": (
        "COVERING INDEX tenure_jobs_ready_by_priority"
        " (queue=? AND state=? AND priority=? AND run_at<?)"
    ),
    "SELECT j.id AS k FROM tenure_jobs j WHERE j.state = ?": (
        "tenure_jobs_succeeded (state=? AND <expr><?)"
    ),
    "SELECT j.id AS k FROM tenure_jobs j WHERE j.state IN": (
        "tenure_jobs_state (state=? AND <expr><?)"
    ),
    "SELECT id FROM tenure_jobs WHERE batch_id IN": "tenure_jobs_batch (batch_id=? AND state=?)",
    "WHERE batch_id = ? AND state = ? RETURNING chain": (
        "tenure_jobs_batch (batch_id=? AND state=?)"
    ),
    "WHERE j.batch_id = b.id AND j.state IN": "tenure_jobs_batch (batch_id=? AND state=?)",
    "WHERE m.batch_id = tenure_batches.id": "tenure_jobs_batch (batch_id=?)",
    # a stopped chain's later links, stored cancelled: by key, however many
    "finished_at = ?, last_error = ? WHERE": "sqlite_autoindex_tenure_jobs_1 (id=?)",
    # the counts by state: running jobs from the lease index (the queued and finished ones
    # are the allowed scans above)
    "UNION ALL SELECT queue, ?, count(*) FROM tenure_jobs WHERE state = ?": (
        "tenure_jobs_lease (state=?)"
    ),
    # listings by state: each names its index's condition
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND state = ? ORDER BY": (
        "tenure_jobs_lease (state=?)"
    ),
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND state = ? AND state IN (?, ?) ORDER": (
        "tenure_jobs_state (state=?)"
    ),
    "WHERE ? = ? AND state = ? AND state IN (?, ?) AND queue = ?": "tenure_jobs_state (state=?)",
    "SELECT *, ? AS now FROM tenure_jobs WHERE ? = ? AND state = ? AND run_at <= ? AND queue": (
        "tenure_jobs_ready_by_priority (queue=? AND state=?)"
    ),
}


def test_a_job_is_in_the_state_index_only_once_finished_and_then_in_a_prune_index(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'entries.db'}")
    try:
        store.enqueue_many([replace(new_job(), keep=DUE) for _ in range(6)])
        store.enqueue_many([new_job(delay=3600.0)])
        taken = store.reserve(queues=["default"], worker=W1, lease=30.0, limit=5)
        for res in taken[:3]:
            assert store.end_attempt(Ending(job_id=res.job_id, token=res.token))[0].accepted
        store.end_attempt(
            Ending(
                job_id=taken[3].job_id,
                token=taken[3].token,
                outcome="failed",
                error="boom",
                permanent=True,
            )
        )
    finally:
        store.close()
    # 3 succeeded, 1 failed, 1 running, 1 ready, 1 scheduled; since migration 0015 the state
    # index holds the failed and cancelled ones only (the live ones are in the ready and lease
    # indexes, the succeeded ones in retention's succeeded index), and since 0017 it is
    # retention's index of them too, and there is one ready index
    assert index_entries(tmp_path / "entries.db") == {
        "sqlite_autoindex_tenure_jobs_1": 7,
        "tenure_jobs_state": 1,
        "tenure_jobs_succeeded": 3,
        "tenure_jobs_ready_by_priority": 2,
        "tenure_jobs_lease": 1,
        "tenure_jobs_batch": 0,
        "tenure_jobs_overlap": 0,
        "tenure_jobs_slots": 0,
        "tenure_jobs_parked": 0,
        "tenure_jobs_debounce": 0,
    }


def test_a_limited_job_is_in_a_concurrency_index_only_while_it_runs_or_is_parked(
    tmp_path: Path,
) -> None:
    """Migration 0016: one entry for each running attempt of a key and each parked job, none
    for a limited job queued and not parked, or finished."""
    store = SQLiteStore(f"sqlite:///{tmp_path / 'limited.db'}")
    try:
        limited = Guards(concurrency_key="k", concurrency_limit=2)
        store.enqueue_many([replace(new_job(), guards=limited) for _ in range(4)])
        taken = store.reserve(queues=["default"], worker=W1, lease=30.0, limit=2)
        assert len(taken) == 2
        # 2 run; 2 are queued and not parked (no claim met them at a full key)
        entries = index_entries(tmp_path / "limited.db")
        assert (entries["tenure_jobs_slots"], entries["tenure_jobs_parked"]) == (2, 0)
        assert store.end_attempt(Ending(job_id=taken[0].job_id, token=taken[0].token))[0].accepted
        # 1 runs; the succeeded one is in neither
        entries = index_entries(tmp_path / "limited.db")
        assert (entries["tenure_jobs_slots"], entries["tenure_jobs_parked"]) == (1, 0)
        assert len(store.reserve(queues=["default"], worker=W2, lease=30.0, limit=9)) == 1
        # 2 run, and the last met the full key: parked
        entries = index_entries(tmp_path / "limited.db")
        assert (entries["tenure_jobs_slots"], entries["tenure_jobs_parked"]) == (2, 1)
    finally:
        store.close()


def test_every_statement_on_the_jobs_finds_them_by_key_or_index_range(tmp_path: Path) -> None:
    path = tmp_path / "plans.db"
    statements = walk(SQLiteStore(f"sqlite:///{path}"))
    plans = plans_of(path, statements)
    for pattern, step in EXPECTED.items():
        matched = [sql for sql in plans if pattern in sql]
        assert matched, f"the walk ran no statement with {pattern!r}"
        for sql in matched:
            assert any(s.endswith(step) for s in plans[sql]), (sql, plans[sql])
    for sql, plan in plans.items():
        for step in plan:
            # a prune chunk's deletes (attempts, effects, unique rows, expired guards) too
            assert not (sql.startswith("DELETE") and step.startswith("SCAN")), (sql, plan)
            if step.startswith("SCAN tenure_jobs"):
                allowed = [want for start, want in SCANS.items() if sql.startswith(start)]
                assert len(allowed) == 1 and step in allowed[0], (sql, plan)


def test_succeeded_jobs_are_counted_and_listed_from_the_succeeded_index(tmp_path: Path) -> None:
    # The listing of succeeded jobs has the shape of the listing of running ones (`state = ?`
    # once its literal is made `?`), so the walk above checks only the first: this one here.
    path = tmp_path / "succeeded.db"
    SQLiteStore(f"sqlite:///{path}").migrate()
    listing = "SELECT *, 0 AS now FROM tenure_jobs WHERE 1 = 1 AND state = 'succeeded'"
    with sqlite3.connect(path) as conn:
        for sql in (listing, listing + " AND queue = 'default'"):
            plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            assert any("INDEX tenure_jobs_succeeded (state=?)" in step for step in plan), plan


def walk(store: SQLiteStore) -> list[str]:
    """Every verb that reads or writes jobs, once or more: the statements SQLite ran."""
    seen: list[str] = []
    try:
        store.db.conn().set_trace_callback(seen.append)
        plain = [replace(new_job(), keep=DUE) for _ in range(12)]
        store.enqueue_many(plain)
        store.enqueue_many([replace(new_job(queue="later", delay=3600.0), priority=2)])
        store.enqueue_many([replace(new_job(), guards=Guards(overlap_key="o"), keep=DUE)])
        members = [replace(new_job(), keep=DUE) for _ in range(3)]
        store.enqueue_many(members, batch=NewBatch(id="b1", name="b", then=new_job(), keep=DUE))
        links = [replace(new_job(), keep=DUE), new_job()]
        link = chains.first_link("c1", links, catch=None, finally_=None, pass_result=False)
        store.enqueue_many([link], batch=NewBatch(id="b2", name="b2", keep=DUE))
        store.cancel(batch_id="b2")
        long = [replace(new_job(queue="chain"), keep=DUE) for _ in range(12)]
        head = chains.first_link("c3", long, catch=None, finally_=None, pass_result=False)
        store.enqueue_many([head])
        res = store.reserve(queues=["chain"], worker=W1, lease=30.0)[0]
        store.end_attempt(
            Ending(job_id=res.job_id, token=res.token, outcome="failed", permanent=True)
        )
        drain(store)
        limited = Guards(concurrency_key="k", concurrency_limit=1)
        store.enqueue_many([replace(new_job(), guards=limited, keep=DUE) for _ in range(3)])
        [held] = store.reserve(queues=["default"], worker=W1, lease=30.0, limit=3)  # 2 parked
        store.queue_counts(keys=True)
        while held is not None:  # each end hands back the next, and claims it
            held = store.end_attempt(
                Ending(job_id=held.job_id, token=held.token),
                queues=["default"],
                worker=W1,
                lease=30.0,
            )[1]
        rescued = new_job(queue="lost")
        store.enqueue_many([rescued])
        store.reserve(queues=["lost"], worker=W2, lease=0.0)
        wait_until(lambda: store.sweep(prune=False).rescued, what="the expired lease rescued")
        failed = store.list_jobs(state="failed", limit=1)
        assert failed and store.retry_job(failed[0].id)
        store.queue_counts()
        for state in (None, "queued", "scheduled", "running", "succeeded", "failed"):
            for queue in (None, "default"):
                store.list_jobs(state=state, queue=queue, limit=10)
        store.list_batches(limit=10)
        store.sweep(dry_run=True)
        while store.sweep(rescue=False, limit=4).pruned.more:
            pass
        store.db.conn().set_trace_callback(None)
    finally:
        store.close()
    return seen


def drain(store: SQLiteStore) -> None:
    """Every ready job of `default` through its end: every fifth fails (and is retried)."""
    got = store.reserve(queues=["default"], worker=W1, lease=30.0)
    n = 0
    while got:
        res, n = got[0], n + 1
        store.heartbeat(worker=W1, leases=[(res.job_id, res.token)], lease=30.0)
        store.report_progress(job_id=res.job_id, token=res.token, fraction=0.5)
        outcome = "failed" if n % 5 == 0 else "succeeded"
        _, nxt = store.end_attempt(
            Ending(
                job_id=res.job_id,
                token=res.token,
                outcome=outcome,
                error="boom",
                permanent=n % 10 == 0,
            ),
            queues=["default"],
            worker=W1,
            lease=30.0,
        )
        got = [nxt] if nxt is not None else []


def plans_of(path: Path, statements: list[str]) -> dict[str, list[str]]:
    """Each distinct statement (literals made `?`) and its plan. The trace
    gives the statements with their values written in: SQLite's planner also decides a
    partial index by a bound value, so the plan is the one the store got."""
    out: dict[str, list[str]] = {}
    with sqlite3.connect(path) as conn:
        for sql in statements:
            if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "WITH")):
                continue
            key = re.sub(r"'[^']*'|\b\d+(\.\d+)?(e[-+]?\d+)?\b", "?", sql.strip())
            if key not in out:
                out[key] = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return out


def index_entries(path: Path) -> dict[str, int]:
    """Entries per index of tenure_jobs, counted from its B-tree pages (dbstat)."""
    with sqlite3.connect(path) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tenure_jobs'"
            )
        ]
        return {
            name: conn.execute(
                "SELECT coalesce(sum(ncell), 0) FROM dbstat WHERE name = ?", (name,)
            ).fetchone()[0]
            for name in names
        }

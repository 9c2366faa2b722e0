"""The busy worker's statements on SQLite: a success fenced by its token (plain, under a
concurrency key, or the general one with RETURNING), its attempt closed, the next job's claim
and its attempt row. jobs.py runs them; bench/row_shape.py times them on plain sqlite3."""

from __future__ import annotations

# A success, fenced by its token in the same statement. A result of None leaves the column
# alone (it is NULL until a success writes one): the worker's hot path pays nothing for it.
# A guarded job's guard_state moves with its state (migration 0018); the plain claim and
# success never name it, so SQLite leaves the guard indexes out of them.
GUARD_SUCCEEDED = ", guard_state = iif(guard_state IS NULL, NULL, 'succeeded')"
COMPLETE, COMPLETE_WITH_RESULT = (
    "UPDATE tenure_jobs SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL,"
    f" tries_used = tries_used + 1{result}{GUARD_SUCCEEDED} WHERE id = ? AND attempt = ?"
    " AND state = 'running'"
    " RETURNING batch_id, chain, queue, concurrency_key, concurrency_limit"
    for result in ("", ", result = ?")
)
COMPLETED_COLUMNS = ("batch_id", "chain", "queue", "concurrency_key", "concurrency_limit")
# The success of a plain job (no batch, chain or concurrency key: what follows its end is
# nothing), fenced alike and counted by its row count. No RETURNING: SQLite runs one as a
# trigger program that buffers its rows in an ephemeral table before the first comes back,
# some 40,000 instructions a job (bench/row_shape.py). A job with any of the three matches
# nothing here, and COMPLETE (with RETURNING) follows; so does a stale token, and a job with
# an overlap or debounce key (its guard_state must move too).
PLAIN = (
    " AND batch_id IS NULL AND chain IS NULL AND concurrency_key IS NULL AND guard_state IS NULL"
)
COMPLETE_PLAIN, COMPLETE_PLAIN_WITH_RESULT = (
    done.split(" RETURNING")[0].replace(GUARD_SUCCEEDED, "") + PLAIN
    for done in (COMPLETE, COMPLETE_WITH_RESULT)
)
PLAIN_COMPLETED = (None, None, None, None, None)  # COMPLETED_COLUMNS of a plain job
# The success of a job this store claimed under a concurrency key with no other guard, no
# batch and no chain (SQLiteJobs._under remembers its key, limit and queue): fenced alike and
# by those very columns, so a row count of one says what COMPLETE's RETURNING would have.
# A hint that no longer matches (another process claimed it, a hand edit) matches nothing,
# and COMPLETE follows.
UNDER = (
    " AND batch_id IS NULL AND chain IS NULL AND concurrency_key = ?"
    " AND concurrency_limit IS ? AND queue = ?"
)
COMPLETE_UNDER, COMPLETE_UNDER_WITH_RESULT = (
    done.split(" RETURNING")[0] + UNDER for done in (COMPLETE, COMPLETE_WITH_RESULT)
)
# the claims remembered for COMPLETE_UNDER at most; past it they are forgotten (a hint only)
UNDER_HINTS = 4096
# endings.close_attempt for a success, as SQLite runs it
CLOSE_SUCCEEDED = (
    "UPDATE tenure_attempts SET ended_at = ?, outcome = 'succeeded', error = NULL,"
    " traceback = NULL WHERE job_id = ? AND number = ?"
)
# a ready job's claim (its attempt row follows), counted by its row count: CLAIM a plain one
# (no guard_state), CLAIM_GUARDED one whose guard_state moves too; CLAIM_UNDER only while its
# concurrency key has a free slot (counted in the key's index: unary + keeps the planner off
# the lease index, every running job of every key; sql.guards' _LIVE_LEASE)
CLAIM, CLAIM_GUARDED, CLAIM_UNDER = (
    f"UPDATE tenure_jobs SET state = 'running'{guard}, attempt = ?, lease_expires_at = ?,"
    f" worker_id = ? WHERE id = ?{under}"
    for guard, under in (
        ("", " AND guard_state IS NULL"),
        (", guard_state = 'running'", ""),
        (
            ", guard_state = 'running'",
            " AND (SELECT count(*) FROM tenure_jobs WHERE concurrency_key = ?"
            " AND guard_state = 'running' AND +lease_expires_at >= ?) < ?",
        ),
    )
)
ATTEMPT_ROW = (
    "INSERT INTO tenure_attempts (job_id, number, worker_id, host, pid, started_at,"
    " last_heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

"""The success of a job under a concurrency limit and the worker's next claim, in one statement
(one round trip, one commit, as claims.COMPLETE_AND_CLAIM is for a plain job): the slot the
ended attempt held goes, in the same write of its key's row, to the next job this worker
claims, and whatever free slots are left hand back the key's oldest parked jobs.

Only for a job outside any batch and chain (those need the transaction path's bookkeeping).

Why one statement can do this safely. The danger is a job parked by a claim that committed
after this statement's snapshot: unseen here, it would be left parked while its key has a
free slot. Every parking writes its key's row in the transaction that parks (claims._slots'
`granted`, guards.take_slot), so the statement takes the key's row only if its newest version
is the one its snapshot sees (`xmin` unchanged): then every parking of that key is in the
snapshot. Rows are *tried* (SKIP LOCKED), the job's row first, then its key's: the statement
never waits, so it cannot deadlock with a rescue or a cancel, which lock in that order and
wait. When either row is busy or the key's row moved on, nothing at all is written
(`settled` 0) and PostgresJobs ends the job on the transaction path, which waits for the key.

The claim takes one job of %(queue)s, the first in the queue's order among its ready head
and the key's oldest parked job of that queue (which, handed back now, would queue at now):
so a saturated key's backlog, all parked, goes from one attempt to the next without a wake.
A head under another concurrency key takes a slot of that key as claims._slots does (its row
tried), or is parked; a head under an overlap or rate guard is left for `reserve`.
"""

from __future__ import annotations

from tenure.core.states import PARKED_AT
from tenure.stores.postgres.claims import (
    WAKE_WAITERS,
    WOKEN,
    claim_and_open,
    close_succeeded,
    held_slots,
)
from tenure.stores.postgres.database import CLOCK
from tenure.stores.sql.control import not_paused

_NOW = "(SELECT now FROM clock)"
_PARKED = f"{PARKED_AT!r}"

# the ended attempt's job row and its key's row, both tried; `held`: empty unless both were
# taken and the key's row is the version this snapshot sees
_HELD = (
    f"WITH clock AS MATERIALIZED (SELECT {CLOCK} AS now),"
    " target AS MATERIALIZED (SELECT id, ctid AS tid, concurrency_key AS key,"
    " coalesce(concurrency_limit, 1) AS lim FROM {s}.tenure_jobs WHERE id = %(id)s"
    " AND attempt = %(token)s AND (state = 'running') IS TRUE AND batch_id IS NULL"
    " AND chain IS NULL AND concurrency_key IS NOT NULL FOR UPDATE SKIP LOCKED),"
    " seen AS MATERIALIZED (SELECT c.xmin AS ver, c.ctid AS tid FROM {s}.tenure_concurrency c"
    " WHERE c.key = (SELECT key FROM target)),"
    " held AS MATERIALIZED (SELECT c.key, c.ctid AS tid, c.running, t.lim"
    " FROM {s}.tenure_concurrency c"
    " JOIN target t ON t.key = c.key WHERE c.ctid = (SELECT tid FROM seen)"
    " AND c.xmin = (SELECT ver FROM seen) FOR UPDATE OF c SKIP LOCKED),"
)


def _done(gate: str = "") -> str:
    """`done`: the ended attempt's success, only once `held` has both rows (and `gate`)."""
    return (
        " done AS (UPDATE {s}.tenure_jobs SET state = 'succeeded', finished_at = clock.now,"
        " lease_expires_at = NULL, tries_used = tries_used + 1, result = %(result)s FROM clock"
        " WHERE ctid = (SELECT t.tid FROM target t JOIN held h ON h.key = t.key)"
        f" AND attempt = %(token)s{gate} RETURNING id, worker_id, clock.now),"
    )


# `head`: the queue's first ready job (as claims' pick); `backlog`: the key's oldest parked
# jobs, as many as it has free slots once the ended attempt's is back, read but not locked (a
# saturated key's oldest parked job is read by every end, and mostly stays parked: the head
# comes first); `handoff`: the first of them in this queue, if it comes before the head, locked
# (tried: a cancel may hold it) and checked again as it is now. Only `held`'s holder hands
# parked jobs of the key back, so the snapshot's backlog is the key's, less what a cancel took.
# (`IS TRUE`, and no key: the primary key is the one index that can answer the handoff's
# `id = `; with the key named, the planner walked the key's parked range instead)
_STILL_PARKED = (
    f" AND (j.state = 'queued') IS TRUE AND j.run_at >= {_PARKED} FOR UPDATE SKIP LOCKED"
)
_CANDIDATES = (
    " head AS MATERIALIZED (SELECT id, ctid AS tid, priority, run_at, seq, concurrency_key AS ckey,"
    " coalesce(concurrency_limit, 1) AS clim, overlap_key IS NULL AND rate_key IS NULL AS bare"
    " FROM {s}.tenure_jobs"
    f" WHERE priority_queue = %(queue)s AND run_at <= {_NOW}{not_paused('%(queue)s')}"
    " AND EXISTS (SELECT 1 FROM held) ORDER BY priority, run_at, seq LIMIT 1"
    " FOR UPDATE SKIP LOCKED),"
    " backlog AS MATERIALIZED (SELECT id, queue, priority, run_at, seq FROM {s}.tenure_jobs"
    " WHERE concurrency_key = (SELECT key FROM held) AND state = 'queued'"
    f" AND run_at >= {_PARKED} ORDER BY run_at, seq"
    " LIMIT (SELECT greatest(lim - running + 1, 0) FROM held)),"
    " handoff AS MATERIALIZED (SELECT j.id, j.ctid AS tid, j.priority, j.seq FROM {s}.tenure_jobs j"
    " WHERE j.id = (SELECT b.id FROM backlog b WHERE EXISTS (SELECT 1 FROM backlog)"
    f" AND b.queue = %(queue)s{not_paused('%(queue)s')} AND NOT EXISTS (SELECT 1 FROM head h"
    f" WHERE (h.priority, h.run_at, h.seq) <= (b.priority, {_NOW}, b.seq))"
    f" ORDER BY b.priority, b.seq LIMIT 1){_STILL_PARKED}),"
    # the one job this claim may take, with its guards
    " cand AS MATERIALIZED (SELECT h.id, h.tid, h.priority, h.run_at, h.seq, h.ckey, h.clim,"
    " h.bare AND h.ckey IS NULL AS free, h.bare AND h.ckey IS NOT NULL AS limited, false AS back"
    " FROM head h WHERE NOT EXISTS (SELECT 1 FROM handoff) UNION ALL"
    f" SELECT f.id, f.tid, f.priority, {_NOW}, f.seq, l.key, l.lim, false, true, true"
    " FROM handoff f, held l),"
)

_RANKED = (
    " ranked AS MATERIALIZED (SELECT c.id, c.tid, g.granted > 0 AS go, c.back"
    " FROM cand c JOIN settled g ON g.key = c.ckey WHERE c.limited),"
)
_SHARE = f"least(w.n, greatest(w.clim + w.rel - {held_slots('c', 'w.clim + w.rel')}, 0))"

# Each key's row written once: the ended key's slot given back (`rel`) and, for the candidate's
# key, a slot taken if one is free; a limited candidate goes if granted, is parked if its key's
# row was taken and is full, and is left to `reserve` (among the guarded) if its row was busy.
# `passes`: the candidate is of the ended attempt's own key, whose row counts no more than its
# limit (so no lapsed holder need be counted): the slot passes straight from the ended attempt
# to the claim, `running` is unchanged, and the row, locked already (`held`), is not written at
# all (a row version and its WAL record less per job of a saturated key). No parking happens,
# so the row's version need not change (the one-statement end's guard, above, looks for
# parkings only). `settled`: each key's row as this claim leaves it, written or not.
_PASSES = (
    " passes AS MATERIALIZED (SELECT h.key, h.running, h.lim FROM held h JOIN cand c"
    " ON c.ckey = h.key AND c.limited WHERE h.running <= h.lim),"
)
_SLOTS = (
    _PASSES + " wanted AS MATERIALIZED (SELECT key, max(lim) AS clim, sum(n) AS n, sum(rel) AS rel"
    " FROM (SELECT ckey AS key, clim AS lim, 1 AS n, 0 AS rel FROM cand WHERE limited"
    " UNION ALL SELECT key, lim, 0, 1 FROM held) w"
    " WHERE NOT EXISTS (SELECT 1 FROM passes) GROUP BY key),"
    # the candidate's key's row tried (at most one key besides the ended attempt's, whose row
    # `held` has locked already and is not locked again)
    " tried AS MATERIALIZED (SELECT key, ctid AS tid, running FROM {s}.tenure_concurrency"
    " WHERE key = (SELECT key FROM wanted WHERE key <> (SELECT key FROM held))"
    " FOR UPDATE SKIP LOCKED),"
    " slots AS MATERIALIZED (SELECT key, tid FROM tried UNION ALL SELECT key, tid FROM held"
    " WHERE key IN (SELECT key FROM wanted)),"
)


# Under the lean statement's `fits` no lapsed holder is ever counted: the ended key's row is
# given a slot back and takes none (n = 0: a candidate of its own key either passes, and then
# nothing is `wanted`, or fails `fits`), and the other key's row counts fewer than its limit.
# So its share is the row's count alone, with no count of the key's running jobs: two
# subqueries (each an aggregate over an index scan) less to set up at every execution.
_SHARE_FITS = "least(w.n, greatest(w.clim + w.rel - c.running, 0))"


def _granted(gate: str = "", share: str = _SHARE) -> str:
    """`granted`: each key's row in `slots` written once (`gate`: only if it holds)."""
    return (
        f" granted AS (UPDATE {{s}}.tenure_concurrency c SET running = c.running - w.rel"
        f" + {share}, granted = {share} FROM (SELECT w.*, t.tid FROM wanted w JOIN slots t"
        f" ON t.key = w.key) w WHERE c.ctid = w.tid{gate}"
        " RETURNING c.key, c.granted, c.running, w.clim),"
    )


_MADE = (
    # a key without a row yet (its first job, or its first since retention deleted the row):
    # the row is made here, holding this claim's slot, instead of leaving the job to `reserve`
    # (a round trip and a read of the queue's window per new key). Its insert is the one wait
    # of this statement: on another transaction making the same key's row at that instant
    # (then DO NOTHING, and the job is left to `reserve` as before). That transaction, an end
    # like this one or guards.take_slot, never waits for a row lock this statement holds (they
    # try every lock), so no cycle can form.
    " made AS (INSERT INTO {s}.tenure_concurrency (key, running, granted)"
    " SELECT w.key, least(w.n, w.clim), least(w.n, w.clim) FROM wanted w"
    " WHERE w.rel = 0 AND w.key NOT IN (SELECT key FROM slots) AND NOT EXISTS (SELECT 1"
    " FROM {s}.tenure_concurrency x WHERE x.key = w.key) ON CONFLICT (key) DO NOTHING"
    " RETURNING key, granted, running),"
    " settled AS MATERIALIZED (SELECT key, granted, running, clim FROM granted"
    " UNION ALL SELECT key, 1, running, lim FROM passes"
    " UNION ALL SELECT m.key, m.granted, m.running, w.clim FROM made m JOIN wanted w"
    " ON w.key = m.key)," + _RANKED + " parked AS (UPDATE {s}.tenure_jobs SET run_at = "
    f"{_PARKED} WHERE id = (SELECT id FROM ranked WHERE NOT go AND NOT back)),"
    # the key's free slots left, after this claim's, hand back its oldest parked jobs (each
    # locked first, tried, as `handoff` is)
    # (only when the key has a free slot left, a one-time filter: a saturated key's end reads
    # nothing here; the key named, as in `back`, for the reason given there)
    " freed AS MATERIALIZED (SELECT j.id FROM {s}.tenure_jobs j WHERE EXISTS (SELECT 1"
    " FROM backlog) AND EXISTS (SELECT 1"
    " FROM settled g WHERE g.key = (SELECT key FROM held) AND g.clim > g.running)"
    " AND j.id = ANY(ARRAY(SELECT b.id FROM backlog b WHERE b.id NOT IN (SELECT id FROM cand)"
    " ORDER BY b.run_at, b.seq LIMIT (SELECT greatest(g.clim - g.running, 0) FROM settled g"
    " WHERE g.key = (SELECT key FROM held))))"
    f" AND j.concurrency_key = (SELECT key FROM held){_STILL_PARKED}),"
    " back AS (UPDATE {s}.tenure_jobs SET run_at = clock.now FROM clock"
    " WHERE EXISTS (SELECT 1 FROM freed) AND id = ANY(ARRAY(SELECT id FROM freed))"
    # true of every backlog row: it makes the key's index answer `id = ANY`, which a generic
    # plan made on a new install answered by a Seq Scan
    " AND concurrency_key = (SELECT key FROM held) AND state = 'queued'"
    f" AND run_at >= {_PARKED} RETURNING queue),"
)

# the claimed row by its ctid: `head` or `handoff` locked it, so it is that version still, and
# a TID is one heap page where the id is a walk of the primary key's index first
_GO = "= (SELECT tid FROM cand WHERE free UNION ALL SELECT tid FROM ranked WHERE go)"

# `settled`, `held`, `passed`, `fits`: 1 or NULL, each CTE yielding one row at most; not
# count(*), as an aggregate's node costs its set-up at every execution (ExecInitAgg was
# 4-6 % of the backend's CPU in the drain)
_RESULT = (
    " SELECT c.*, p.picked, p.guarded, 0 AS parked,"
    " (SELECT 1 FROM done) AS settled, (SELECT 1 FROM held) AS held,"
    " (SELECT 1 FROM passes) AS passed,"
    f" {WOKEN} AS woken, {{handed}} AS handed, {{fits}} AS fits"
    " FROM (SELECT count(*) AS picked, coalesce(array_agg(id) FILTER (WHERE NOT free"
    " AND id NOT IN (SELECT id FROM ranked)), '{{}}') AS guarded FROM cand) p"
    " LEFT JOIN claimed c ON true"
)

LIMITED_END_AND_CLAIM = (
    _HELD
    + _done()
    + close_succeeded("%(token)s")
    + ","
    + WAKE_WAITERS
    + ","
    + _CANDIDATES
    + _SLOTS
    + _granted()
    + _MADE
    + claim_and_open(_NOW, _GO, by="j.ctid")
    + _RESULT.format(
        handed="(SELECT count(pg_notify(%(channel)s, q)) FROM (SELECT DISTINCT queue AS q"
        " FROM back) b)",
        fits="1",
    )
)

# The common case in a statement of its own (PostgreSQL pays for each CTE of a statement at
# every execution, data-modifying ones most: each opens the jobs table's indexes whether it
# writes or not): no parked job of the ended key to hand back, and a candidate that needs
# no new key row and no parking (none, a plain or otherwise guarded job, the slot passing to
# the ended key's next job, or another key's row tried and free). `fits` checks that from the
# rows read and locked, before anything is written; every write is gated on it, so when it
# fails nothing is written and PostgresJobs runs LIMITED_END_AND_CLAIM, which judges again
# from a new snapshot. Its locks are a subset of the full statement's, taken in the same
# order and all tried (SKIP LOCKED: the job's row, its key's, the candidate's, the
# candidate's key's), with no insert: it never waits, so it cannot take part in a deadlock.
# The guarantees are the full statement's by construction: the slot passes or is counted
# under the key's row lock (`held`, its version fenced as above), and a case the lean
# statement cannot settle (a hand-back, a park, a new key, a lapsed holder to count) is
# never settled by it. A candidate of another key whose row shows a free slot is granted
# one (`_SHARE` is then 1, lapsed leases not counted: running < limit).
_FITS = (
    " fits AS MATERIALIZED (SELECT 1 AS ok FROM held h WHERE (NOT EXISTS (SELECT 1 FROM"
    " backlog b WHERE b.id NOT IN (SELECT id FROM cand)) OR EXISTS (SELECT 1 FROM passes p"
    " WHERE p.running >= p.lim)) AND NOT EXISTS (SELECT 1 FROM cand c WHERE c.limited"
    " AND NOT EXISTS (SELECT 1 FROM passes) AND (c.ckey = h.key OR NOT EXISTS (SELECT 1"
    " FROM tried t WHERE t.key = c.ckey AND t.running < c.clim)))),"
)
_FIT = " AND EXISTS (SELECT 1 FROM fits)"
_GO_LEAN = f"= (SELECT tid FROM cand WHERE free{_FIT} UNION ALL SELECT tid FROM ranked WHERE go)"

LIMITED_END_AND_CLAIM_LEAN = (
    _HELD
    + _CANDIDATES
    + _SLOTS
    + _FITS
    + _done(_FIT)
    + close_succeeded("%(token)s")
    + ","
    + WAKE_WAITERS
    + ","
    + _granted(_FIT, _SHARE_FITS)
    + " settled AS MATERIALIZED (SELECT key, granted, running, clim FROM granted"
    " UNION ALL SELECT key, 1, running, lim FROM passes WHERE EXISTS (SELECT 1 FROM fits)),"
    + _RANKED
    + claim_and_open(_NOW, _GO_LEAN, by="j.ctid")
    + _RESULT.format(handed="0", fits="(SELECT ok FROM fits)")
)

# The slot passing straight to the ended key's next job (a saturated key: `concurrency=N`
# with its backlog queued) in a statement of its own: LIMITED_END_AND_CLAIM_LEAN less what
# that case never uses (`wanted`, `tried`, `slots`, `granted`: no key row is written, the one
# locked by `held` is left as it is). PostgreSQL initialises every node of a statement at each
# execution, used or not, so the passing end pays only for its own. Its `fits` is the lean
# statement's, narrowed to `passes`: the slot passes, and the key's parked jobs need no
# hand-back (the key is full, or none is parked). When it fails nothing is written and
# PostgresJobs runs the lean statement, then the full one. Sent when the attempt ending was
# itself claimed by a pass (`passed`), the steady state of a saturated key. Its locks are a
# subset of the lean statement's, in the same order, all tried: it never waits.
_FITS_PASS = (
    _PASSES
    + " fits AS MATERIALIZED (SELECT 1 AS ok FROM passes p WHERE p.running >= p.lim OR NOT EXISTS"
    " (SELECT 1 FROM backlog b WHERE b.id NOT IN (SELECT id FROM cand))),"
)

LIMITED_END_AND_CLAIM_PASS = (
    _HELD
    + _CANDIDATES
    + _FITS_PASS
    + _done(_FIT)
    + close_succeeded("%(token)s")
    + ","
    + WAKE_WAITERS
    + ","
    + " settled AS MATERIALIZED (SELECT key, 1 AS granted, running, lim AS clim FROM passes"
    " WHERE EXISTS (SELECT 1 FROM fits)),"
    + _RANKED
    + claim_and_open(_NOW, "= (SELECT tid FROM ranked WHERE go)", by="j.ctid")
    + _RESULT.format(handed="0", fits="(SELECT ok FROM fits)")
)

"""Chains on the SQL stores (tenure.core.chains), written once for SQLite and PostgreSQL: when a
link ends for good, inside the transaction that records that end, the next link is inserted
(or, once the chain stopped, the later links are stored cancelled and catch and finally are
queued). The end happens once (fenced by the attempt's token), so each of these happens once:
a worker killed before the commit leaves neither the end nor the next link.

A chain in a batch is one member: its live link carries the batch id, so the batch's queued
work (cancel, progress) sees it, and the batch counts it once, when the chain ends (the store's
success path skips the count while `chains.goes_on`)."""

from __future__ import annotations

from dataclasses import replace

from tenure.core import chains
from tenure.stores.sql.dialect import Cursor, Dialect, chunks, marks


def link_ended(
    d: Dialect,
    cur: Cursor,
    chain: str | None,
    outcome: str,
    now: float,
    *,
    job_id: str | None = None,
    batch_id: str | None = None,
    result: str | None = None,
) -> None:
    """Follow the chain (a link's `chain` column; None: a plain job, nothing to do). A link of
    a batch (`batch_id`) hands its membership to the next link, with the progress it reported
    (the batch's progress never goes back)."""
    if chain is None:
        return
    follow = chains.step(chain, outcome, result)
    if follow.dispatch is not None:
        nxt = replace(follow.dispatch, batch_id=batch_id)
        d.insert_jobs(cur, [nxt], now, skip_existing=True)
        if batch_id is not None and job_id is not None:
            cur.execute(
                d.q(
                    "UPDATE {s}.tenure_jobs SET progress = (SELECT progress FROM {s}.tenure_jobs"
                    " WHERE id = %s) WHERE id = %s"
                ),
                (job_id, nxt.id),
            )
        # no wake of its own: insert_jobs wakes the queue (PostgreSQL's NOTIFY with the commit;
        # SQLite's waiters see every commit)
    if follow.cancelled:
        d.insert_jobs(cur, follow.cancelled, now, skip_existing=True)
        ids = [j.id for j in follow.cancelled]
        for chunk in chunks(ids):
            # `state || ''`: the state test kept off every index (as retention's delete by
            # key), or SQLite's planner takes (state, queue) for more than a few ids and
            # walks every queued job of the store
            cur.execute(
                d.q(
                    "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s,"
                    f" last_error = %s WHERE state || '' = 'queued' AND id IN ({marks(chunk)})"
                ),
                (now, follow.reason, *chunk),
            )
        for cancelled in ids:
            d.job_ended(cur, cancelled)
    if follow.callbacks:
        d.insert_jobs(cur, follow.callbacks, now, skip_existing=True)


# A chain link's success while its batch no longer runs new work: the chain stops there.
BATCH_STOPPED = "succeeded, but its batch no longer runs new work"

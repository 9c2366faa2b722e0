"""Chains on the SQL stores (tenure.chains), written once for SQLite and PostgreSQL: when a
link ends for good, inside the transaction that records that end, the next link is inserted
(or, once the chain stopped, the later links are stored cancelled and catch and finally are
queued). The end happens once (fenced by the attempt's token), so each of these happens once:
a worker killed before the commit leaves neither the end nor the next link."""

from __future__ import annotations

from tenure import chains
from tenure.stores.sql.batches import Cursor, Dialect

ID_CHUNK = 500


def link_ended(d: Dialect, cur: Cursor, chain: str | None, outcome: str, now: float) -> None:
    """Follow the chain (a link's `chain` column; None: a plain job, nothing to do)."""
    if chain is None:
        return
    follow = chains.step(chain, outcome)
    if follow.dispatch is not None:
        d.insert_jobs(cur, [follow.dispatch], now, skip_existing=True)
        d.wake(cur, follow.dispatch.queue)
    if follow.cancelled:
        d.insert_jobs(cur, follow.cancelled, now, skip_existing=True)
        ids = [j.id for j in follow.cancelled]
        for start in range(0, len(ids), ID_CHUNK):
            chunk = ids[start : start + ID_CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            cur.execute(
                d.q(
                    "UPDATE {s}.tenure_jobs SET state = 'cancelled', finished_at = %s,"
                    f" last_error = %s WHERE state = 'queued' AND id IN ({marks})"
                ),
                (now, follow.reason, *chunk),
            )
        for job_id in ids:
            d.job_ended(cur, job_id)
    if follow.callbacks:
        d.insert_jobs(cur, follow.callbacks, now, skip_existing=True)
        for queue in {j.queue for j in follow.callbacks}:
            d.wake(cur, queue)

"""When a `--burst` worker may exit (worker/burst.py's BurstEnd), read from a real store.

A burst worker decides right after a reserve that found nothing. A job deferred by its overlap
key a moment ago (or a retry with a short backoff) can come due in between: it is no longer
scheduled, so "nothing scheduled or running" was true of the counts, and every idle burst
worker exited and left it queued (tests/e2e/test_redis_e2e.py's 1,000 overlap-keyed jobs hung
about one run in eight this way). The exit check must send the worker back to reserve.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.helpers import W2, enqueue, new_job, reserve_one, wait_until
from tenure.core.guards import Guards
from tenure.core.records import Ending
from tenure.stores import Store
from tenure.worker.burst import BurstEnd

SHORT = 0.2  # the overlap key's delay: long enough to see the job scheduled, short to wait out
NO_SLACK = 0.0  # a scheduled job does not hold the worker: only a ready one may


def test_a_job_that_came_due_since_the_reserve_keeps_a_burst_worker(store: Store) -> None:
    holder = replace(new_job(queue="b"), guards=Guards(overlap_key="k", overlap_delay=SHORT))
    waiter = replace(new_job(queue="b"), guards=Guards(overlap_key="k", overlap_delay=SHORT))
    enqueue(store, holder)
    held = reserve_one(store, queues=["b"])
    enqueue(store, waiter)
    # the reserve that finds nothing: the waiter is deferred by its overlap key
    assert store.reserve(queues=["b"], worker=W2, lease=30, limit=1) == []
    store.end_attempt(Ending(job_id=held.job_id, token=held.token))
    end = BurstEnd(store, ["b"], NO_SLACK)
    wait_until(lambda: store.queue_counts()["b"]["queued"] == 1, what="the deferral to pass")
    assert not end.done(), "a burst worker exited with a job ready in its queue"
    again = reserve_one(store, queues=["b"], worker=W2)
    assert again.job_id == waiter.id
    store.end_attempt(Ending(job_id=again.job_id, token=again.token))
    assert end.done()


def test_a_ready_job_in_a_paused_queue_does_not_keep_a_burst_worker(store: Store) -> None:
    # the quiet twin: no reserve would take it, so the worker exits and names it
    enqueue(store, new_job(queue="p"))
    store.set_control(paused={"p": True})
    end = BurstEnd(store, ["p"], NO_SLACK)
    assert end.leftover(store.now()).paused_ready == {"p": 1}
    assert end.done()

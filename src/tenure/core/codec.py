"""The JSON shape a job written down until its turn is kept in (a batch callback, a chain's later
link), and its guards as stored beside a job: one shape on every backend."""

from __future__ import annotations

from typing import Any

from tenure.core.guards import NO_GUARDS, Guards
from tenure.core.records import NewJob
from tenure.core.retention import KEEP_FOREVER, Keep
from tenure.core.retry import Policy


def callback_to_json(job: NewJob) -> dict[str, Any]:
    """A batch callback (or a chain's later link) written down until its turn; one shape on
    every backend. It keeps the job's overlap and rate guards, under the job-hash field names
    (`guard_fields`), so it is deferred like any job when it runs; unique keys do not apply."""
    return {
        "id": job.id,
        "name": job.name,
        "queue": job.queue,
        "payload": job.payload,
        "policy": job.policy.text,
        "delay": job.delay,
        "keep": [job.keep.succeeded, job.keep.failed],
        **guard_fields(job.guards),
    }


def callback_from_json(data: dict[str, Any]) -> NewJob:
    return NewJob(
        id=data["id"],
        name=data["name"],
        queue=data["queue"],
        payload=data["payload"],
        policy=Policy.from_json(data["policy"]),
        delay=float(data.get("delay", 0.0)),
        guards=_guards_from_json(data),
        keep=_keep_from_json(data.get("keep")),
    )


def guard_fields(g: Guards) -> dict[str, Any]:
    """A job's overlap and rate guards as stored beside it ({} for none): overlap_key and
    overlap_delay, rate_key, rate_limit and rate_window (a rate guard only when complete)."""
    fields: dict[str, Any] = {}
    if g.overlap_key is not None:
        fields.update(overlap_key=g.overlap_key, overlap_delay=float(g.overlap_delay))
    if g.rate_key is not None and g.rate_limit is not None and g.rate_window:
        fields.update(
            rate_key=g.rate_key, rate_limit=int(g.rate_limit), rate_window=float(g.rate_window)
        )
    if g.concurrency_key is not None and g.concurrency_limit is not None:
        fields.update(concurrency_key=g.concurrency_key, concurrency_limit=int(g.concurrency_limit))
    return fields


def _guards_from_json(data: dict[str, Any]) -> Guards:
    # written before callbacks kept their guards: no field, no guard (a damaged one: none)
    overlap, delay = data.get("overlap_key"), data.get("overlap_delay")
    rate, limit, window = data.get("rate_key"), data.get("rate_limit"), data.get("rate_window")
    if not isinstance(rate, str) or not isinstance(limit, int | float):
        rate = limit = None
    if not isinstance(window, int | float) or window <= 0:
        rate = limit = window = None
    ckey, climit = data.get("concurrency_key"), data.get("concurrency_limit")
    if not isinstance(ckey, str) or not isinstance(climit, int) or climit < 1:
        ckey = climit = None
    if not isinstance(overlap, str) and rate is None and ckey is None:
        return NO_GUARDS
    return Guards(
        concurrency_key=ckey,
        concurrency_limit=climit,
        overlap_key=overlap if isinstance(overlap, str) else None,
        overlap_delay=float(delay) if isinstance(delay, int | float) else 1.0,
        rate_key=rate,
        rate_limit=None if limit is None else int(limit),
        rate_window=None if rate is None or window is None else float(window),
    )


def _keep_from_json(value: Any) -> Keep:
    # a callback written before retention existed is kept forever, as its batch's jobs were
    if not isinstance(value, list) or len(value) != 2:
        return KEEP_FOREVER
    seconds = [float(v) if isinstance(v, int | float) else None for v in value]
    return Keep(seconds[0], seconds[1])

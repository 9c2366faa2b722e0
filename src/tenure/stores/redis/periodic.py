"""Periodic jobs on Redis: a job's periodic state is a field of its queue's hash

    PREFIX:{q:QUEUE}:periodic   hash  periodic job name -> "LAST_DUE LAST_JOB_ID"

under the queue's hash tag, so claiming a due time and enqueuing its run are one script in one
Redis Cluster slot (lua/queue/claim_periodic.lua, which creates the job with the same
lib/enqueue.lua as every dispatch). A periodic job moved to another queue starts afresh there:
its first due time in the new queue is recorded, not run.
"""

from __future__ import annotations

from tenure.core.errors import TenureError
from tenure.core.records import NewJob, PeriodicClaim, PeriodicRecord
from tenure.stores.redis.database import Call, RedisDatabase, enqueue_args

CLAIMS: tuple[PeriodicClaim, ...] = ("dispatched", "recorded", "taken")


class RedisPeriodic:
    db: RedisDatabase  # the store's own (RedisStore sets it)

    def claim_periodic(
        self, *, name: str, queue: str, due: float, job: NewJob | None
    ) -> PeriodicClaim:
        if job is not None and job.queue != queue:
            raise TenureError(
                f"periodic job {name!r}: its run goes to {job.queue!r}, not {queue!r}"
            )
        run = enqueue_args(job) if job is not None else []
        # The registry first: list_periodic (and get_job) find a queue through it.
        calls: list[Call] = [
            (self.db.g["register_queues"], [self.db.global_key("queues")], [queue]),
            self.db.qcall("claim_periodic", queue, name, repr(float(due)), *run),
        ]
        outcome = str(self.db.run_many(calls)[1])
        if outcome not in CLAIMS:
            raise TenureError(f"claim_periodic answered {outcome!r}")
        if outcome == "dispatched" and job is not None:
            self.db.remember(job.id, queue)
        return outcome

    def list_periodic(self) -> list[PeriodicRecord]:
        latest: dict[str, PeriodicRecord] = {}
        for fields in self.db.hashes([f"{self.db.base(q)}:periodic" for q in self.db.queues()]):
            for name, value in fields.items():
                record = periodic_record(name, str(value))
                if name not in latest or record.last_due > latest[name].last_due:
                    latest[name] = record
        return [latest[name] for name in sorted(latest)]


def periodic_record(name: str, value: str) -> PeriodicRecord:
    due, _, job_id = value.partition(" ")
    try:
        last_due = float(due)
    except ValueError:
        last_due = 0.0  # a damaged field still lists the job rather than hiding it
    return PeriodicRecord(name, last_due, job_id or None)

"""The operators' verbs of the SQL stores, written once over two hooks each store gives: a read
(`_read`: a cursor) and a change (`_change`: a cursor in a write transaction, and the store's
clock, read when called: on PostgreSQL after the locks taken so far). What differs on purpose
(the hot path, heartbeats, rescue, waiting, counts) stays in each store."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

from tenure.core.records import (
    BatchRecord,
    CancelResult,
    PeriodicRecord,
    WorkerRecord,
    cancel_target,
)
from tenure.stores.sql import batches, control, operations, periodic, workers
from tenure.stores.sql.dialect import Cursor, Dialect

Clock = Callable[[], float]


def usable_id(value: str) -> bool:
    """An id a person typed may hold a NUL, which PostgreSQL text cannot: no such job."""
    return "\x00" not in value


class SQLStore:
    dialect: Dialect

    def _read(self) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def _change(self) -> AbstractContextManager[tuple[Cursor, Clock]]:
        raise NotImplementedError

    # -- batches -----------------------------------------------------------------------
    def list_batches(
        self, *, ids: Sequence[str] | None = None, limit: int = 50
    ) -> list[BatchRecord]:
        with self._read() as cur:
            found = None if ids is None else [i for i in ids if usable_id(i)]
            return batches.list_batches(self.dialect, cur, found, limit)

    # -- operating -----------------------------------------------------------------------
    def retry_job(self, job_id: str) -> bool:
        if not usable_id(job_id):
            return False
        with self._change() as (cur, clock):
            return operations.retry_job(self.dialect, cur, job_id, clock())

    def cancel(self, job_id: str | None = None, *, batch_id: str | None = None) -> CancelResult:
        kind, target = cancel_target(job_id, batch_id)
        if not usable_id(target):
            return CancelResult(accepted=False, state="missing")
        with self._change() as (cur, clock):
            if kind == "batch":
                # the batch row, then its queued members: the lock order of every batch change
                return control.cancel_batch(self.dialect, cur, target, clock())
            return control.cancel(self.dialect, cur, target, clock)

    def set_control(
        self, *, paused: Mapping[str, bool] | None = None, restart: bool = False
    ) -> float:
        with self._change() as (cur, clock):
            return control.set_control(self.dialect, cur, paused or {}, restart, clock())

    def list_workers(self) -> list[WorkerRecord]:
        with self._read() as cur:
            return workers.list_all(self.dialect, cur)

    def list_periodic(self) -> list[PeriodicRecord]:
        with self._read() as cur:
            return periodic.read_all(self.dialect, cur)

"""kill-prune's own instruments: the store as it was before the workers pruned it, and the
check that pruning ran and kept what it must.

The checker reconciles the ledger with each job's record (state, attempts, effects). Pruning
deletes those records a few seconds after a job succeeds, so `RecordingStore` copies every
finished job's record the moment it is seen finished (a look every 0.2 s, ten times within
the 2 s the scenario keeps a job): a finished job's record does not change afterwards, so the
copy is what the store held. A job that vanished without having been seen finished is
reported missing (lost), never excused.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

from tenure.stores.base import get_job

FINAL = ("succeeded", "failed", "cancelled")
LOOK_EVERY_S = 0.2


class RecordingStore:
    """The App's store, with `list_jobs` (by id too) answering for pruned jobs too."""

    def __init__(self, store: Any) -> None:
        self.real = store
        self.seen: dict[str, Any] = {}  # job id -> its record when first seen finished
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._record, daemon=True)
        self._thread.start()

    @classmethod
    def install(cls, app: Any) -> RecordingStore:
        recording = cls(app.store)
        app._store, app._store_pid = recording, os.getpid()
        return recording

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def _record(self) -> None:
        while not self._done.wait(LOOK_EVERY_S):
            with contextlib.suppress(Exception):  # a store outage: look again next time
                self.look()

    def look(self) -> None:
        for state in FINAL:
            for job in self.real.list_jobs(state=state, limit=1_000_000):
                if job.id not in self.seen:
                    full = get_job(self.real, job.id)
                    if full is not None and full.state in FINAL:
                        self.seen[job.id] = full

    def list_jobs(self, *, ids: Any = None, **kwargs: Any) -> list[Any]:
        if ids is not None:
            found = {r.id: r for r in self.real.list_jobs(ids=ids)}
            return [found.get(i) or self.seen[i] for i in ids if i in found or i in self.seen]
        live = self.real.list_jobs(**kwargs)
        ids = {j.id for j in live}
        state = kwargs.get("state")
        gone = [r for i, r in self.seen.items() if i not in ids and state in (None, r.state)]
        return live + gone

    def pruned(self) -> list[str]:
        """Jobs seen finished that the store no longer holds."""
        return [i for i in list(self.seen) if get_job(self.real, i) is None]

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)


def check_pruning(store: RecordingStore, periodic: str) -> tuple[list[str], list[str]]:
    """(problems, notes): pruning deleted jobs during the run, and the latest run of the
    periodic job is still in the store itself."""
    problems: list[str] = []
    pruned = store.pruned()
    if not pruned:
        problems.append("no finished job was pruned: retention never ran")
    stored = {r.name: r for r in store.real.list_periodic()}.get(periodic)
    if stored is None or stored.last_job_id is None:
        problems.append(f"no periodic state for {periodic!r}")
    elif get_job(store.real, stored.last_job_id) is None:
        problems.append(f"the latest run of {periodic!r} ({stored.last_job_id}) was pruned")
    runs = sum(1 for i in pruned if store.seen[i].name == periodic)
    notes = [f"pruned: {len(pruned)} of {len(store.seen)} finished jobs ({runs} periodic runs)"]
    return problems, notes

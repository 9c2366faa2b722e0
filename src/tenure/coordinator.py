"""The coordinator pattern, ready-made: `app.batch_over_ids(job, lo, hi, ...)`.

A coordinator reads nothing but `lo`/`hi`; it adds one small job per id range for one slice,
then the coordinator of the next slice, so planning is spread out like the work itself (seed
004). Member ids are derived from the range, so a coordinator that crashed after adding and runs
again adds nothing twice. Only coordinators add jobs; the small jobs never dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tenure.context import current
from tenure.core.batch import count_ranges, ranges
from tenure.core.errors import ConfigError
from tenure.job import Sig

COORDINATOR = "tenure.coordinate"  # every App registers `coordinator(...)` under this name

AddToBatch = Callable[..., int]  # App.add_to_batch(batch_id, sigs, *, ids=...)


def coordinator(add_to_batch: AddToBatch) -> Callable[..., None]:
    """The coordinator job's function, adding through `add_to_batch` (the App's): this module
    plans, the App acts, so the two never import each other."""

    def coordinate(
        job_name: str, lo: int, hi: int, chunk: int, slice_jobs: int, queue: str | None
    ) -> None:
        ctx = current()
        batch = ctx.batch
        if batch is None:
            raise ConfigError("tenure.coordinate runs only inside a batch")
        slice_hi = min(hi, lo + chunk * slice_jobs - 1)
        members = [
            (member_id(batch.id, a), Sig(job_name, (a, b), queue=queue))
            for a, b in ranges(lo, slice_hi, chunk)
        ]
        if slice_hi < hi:
            nxt = Sig(
                COORDINATOR, (job_name, slice_hi + 1, hi, chunk, slice_jobs, queue), queue=queue
            )
            members.append((coordinator_id(batch.id, slice_hi + 1), nxt))
        add_to_batch(batch.id, [s for _, s in members], ids=[i for i, _ in members])

    return coordinate


@dataclass(frozen=True)
class OverIds:
    """A coordinated batch, planned: what `App.batch` is given to create it."""

    sigs: Sequence[Sig]  # only the first coordinator: the rest is planned later
    name: str
    total: int  # declared once: progress never goes backwards
    first_ids: Callable[[str], list[str]]


def plan_over_ids(
    job_name: str,
    lo: int,
    hi: int,
    *,
    chunk: int = 50,
    slice_jobs: int = 200,
    name: str | None = None,
    queue: str | None = None,
) -> OverIds:
    if chunk < 1 or slice_jobs < 1:
        raise ConfigError(
            f"chunk and slice_jobs: expected ints >= 1, got chunk={chunk!r}, "
            f"slice_jobs={slice_jobs!r}"
        )
    n_ranges = count_ranges(lo, hi, chunk)
    n_coordinators = -(-n_ranges // slice_jobs)
    first = Sig(COORDINATOR, (job_name, lo, hi, chunk, slice_jobs, queue), queue=queue)
    return OverIds(
        sigs=[first] if n_ranges else [],
        name=name or f"{job_name} over ids {lo}..{hi}",
        total=n_ranges + n_coordinators,
        first_ids=lambda batch_id: [coordinator_id(batch_id, lo)],
    )


def member_id(batch_id: str, lo: int) -> str:
    return f"{batch_id}.{lo}"


def coordinator_id(batch_id: str, lo: int) -> str:
    return f"{batch_id}.c{lo}"

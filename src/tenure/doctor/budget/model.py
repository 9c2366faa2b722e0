"""The model every budget rule reads: entry points and jobs, the loops in them and what each
iteration does, dispatches and waits. Readers fill it; rules never look at syntax."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# request: a web entry point; command: a console command; migration; job: a queued job.
Kind = Literal["request", "command", "migration", "job"]
# What one iteration (or one call) does that costs time against the 5-second budget.
Effect = Literal["write", "mail", "http", "file", "dispatch", "method", "query"]


# Method names that say the call does work per row even when the doctor cannot read its body
# (it lives in a package, or does it through a library the doctor does not know).
COSTLY_VERBS = ("export", "import", "sync", "send", "process", "generate", "notify", "upload",
                "download", "charge", "refund", "recalculate", "rebuild", "archive", "publish",
                "reindex", "backfill", "migrate", "transcode", "resize", "push_to", "update",
                "delete", "attach", "detach", "recompute", "assign")  # fmt: skip


def costly_name(name: str) -> bool:
    lowered = name.lower().lstrip("_")
    return lowered.startswith(COSTLY_VERBS)


@dataclass(frozen=True)
class Costly:
    """One costly call: `what` as written (`$order->save()`, `requests.post`), on `line`."""

    effect: Effect
    what: str
    line: int
    via: str = ""  # the project method it sits in, when followed into one


@dataclass
class Loop:
    """A loop over rows: `over` names the query as written; `work` what each row costs."""

    over: str
    line: int
    work: list[Costly] = field(default_factory=list)
    bounded: bool = False  # over an id range the unit was given (whereBetween, id__range)


@dataclass
class Unit:
    """One entry point or job with what the rules need to know about its body."""

    kind: Kind
    name: str  # as a person finds it: `OrderController@export`, `views.export_orders`
    framework: str  # "Laravel controller action", "Django view", "Celery task", ...
    path: str
    line: int
    loops: list[Loop] = field(default_factory=list)
    untimed_calls: list[Costly] = field(default_factory=list)  # external calls, no timeout
    dispatches: list[Costly] = field(default_factory=list)  # jobs it sends (outside loops too)
    dispatches_job_class: bool = False  # a Job class / task, not a static closure
    waits: list[Costly] = field(default_factory=list)  # dispatchSync, .get(), h.wait()
    adds_to_batch: list[Costly] = field(default_factory=list)  # $this->batch()->add, group()
    plucks_all_ids: list[Costly] = field(default_factory=list)  # every id read into memory
    cursor: list[Costly] = field(default_factory=list)  # stored-cursor reads and writes
    redispatch_offset: list[Costly] = field(default_factory=list)  # self::dispatch($o + N)
    self_dispatch: list[Costly] = field(default_factory=list)
    progress_reads: list[Costly] = field(default_factory=list)  # $batch->progress()
    is_member: bool = False  # a batch member: Batchable, in a group(), in app.batch([...])
    floods: list[Costly] = field(default_factory=list)  # many adds, no queue of its own, no delay
    exports: list[Costly] = field(default_factory=list)  # a file of every row built right here

    @property
    def is_coordinator(self) -> bool:
        return bool(self.adds_to_batch)


@dataclass
class Code:
    """Every unit the readers found in one project."""

    units: list[Unit] = field(default_factory=list)
    # Jobs that add slices to their own batch exist: a batch's own progress() goes backwards.
    has_growing_batches: bool = False

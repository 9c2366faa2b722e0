"""The budget rules over the model: each finding names the entry point or job, the loop or call
whose cost grows with the data, why (index.py's sentence) and the fix in the standard's shape."""

from __future__ import annotations

from tenure.doctor.budget.index import FIXES
from tenure.doctor.budget.model import Code, Costly, Loop, Unit
from tenure.doctor.model import Finding, Source
from tenure.doctor.rules import finding

_IN = {"request": "work-in-request", "command": "work-in-command", "migration": "work-in-migration"}


def check(code: Code) -> list[Finding]:
    out: list[Finding] = []
    for unit in code.units:
        if unit.kind in _IN:
            out += _entry(unit)
        else:
            out += _job(unit)
        if unit.kind == "request":
            out += _report(
                unit,
                "request-waits-for-job",
                unit.waits[:1],
                "dispatches a job and then blocks on its result",
            )
            if code.has_growing_batches:
                out += _report(
                    unit,
                    "progress-total-regresses",
                    unit.progress_reads[:1],
                    "shows a batch's own progress while a coordinator adds slices to it",
                )
        out += _report(
            unit,
            "batch-floods-queue",
            unit.floods[:1],
            "adds a job per row to one batch, with no queue of its own and no delay",
        )
    return out


def _work(loop: Loop) -> str:
    first = loop.work[0]
    via = f" (in {first.via})" if first.via else ""
    kinds = sorted({c.effect for c in loop.work})
    return f"{first.what}{via}, line {first.line}; per row: {', '.join(kinds)}"


def _entry(unit: Unit) -> list[Finding]:
    rule = _IN[unit.kind]
    out: list[Finding] = []
    for loop in unit.loops:
        if loop.bounded or not loop.work:
            continue
        out.append(
            _finding(
                rule,
                unit,
                loop.line,
                f"walks every row of {loop.over} and works on each ({_work(loop)})",
            )
        )
    if unit.kind == "request":
        for call in unit.untimed_calls[:1]:
            out.append(
                _finding(
                    rule,
                    unit,
                    call.line,
                    f"calls {call.what} with no timeout within the 5-second budget: it can "
                    "hold the request for as long as the other side takes",
                )
            )
    if unit.kind == "request":
        for call in unit.exports[:1]:
            out.append(
                _finding(
                    rule,
                    unit,
                    call.line,
                    f"builds a whole export file ({call.what}) while the request waits: its "
                    "cost grows with every row exported",
                )
            )
    if unit.kind == "migration" and unit.dispatches_job_class:
        call = unit.dispatches[0]
        out.append(
            _finding(
                rule,
                unit,
                call.line,
                f"dispatches {call.what} from a migration: a job class may change or "
                "vanish before the job runs",
            )
        )
    return out


def _job(unit: Unit) -> list[Finding]:
    out: list[Finding] = []
    walks = [lp for lp in unit.loops if not lp.bounded and lp.work]
    per_row_dispatch = [lp for lp in walks if all(c.effect == "dispatch" for c in lp.work)]
    coordinator = unit.is_coordinator or bool(per_row_dispatch)
    if coordinator:
        rows = [lp for lp in unit.loops if not lp.bounded]
        if unit.plucks_all_ids:
            call = unit.plucks_all_ids[0]
            what = f"reads every id ({call.what}) to add its jobs"
            out.append(_finding("coordinator-walks-rows", unit, call.line, what))
        elif rows:
            what = f"adds jobs while it walks every row of {rows[0].over}"
            out.append(_finding("coordinator-walks-rows", unit, rows[0].line, what))
    elif walks and not unit.is_member:
        loop = walks[0]
        out.append(
            _finding(
                "job-not-batched",
                unit,
                loop.line,
                f"walks every row of {loop.over} and works on each ({_work(loop)}), as one job",
            )
        )
    # A coordinator that sends the coordinator of the next slice (`until + 1`) is the
    # standard's own shape; a small job that sends itself on from where it stopped is not.
    resumes = [] if coordinator else unit.redispatch_offset
    if resumes or _reads_and_writes(unit.cursor):
        call = (resumes or unit.cursor)[0]
        out.append(
            _finding(
                "job-resumes-from-cursor",
                unit,
                call.line,
                f"resumes from a stored cursor ({call.what})",
            )
        )
    # A job that sends itself on is also a member adding work, whether or not it carries a
    # cursor: both are reported (the fix of one is not the fix of the other).
    if not coordinator and (_member_sends(unit) or unit.self_dispatch):
        call = (unit.self_dispatch or unit.dispatches)[0]
        what = "re-dispatches itself" if unit.self_dispatch else "dispatches new jobs"
        out.append(_finding("member-dispatches", unit, call.line, f"{what} ({call.what})"))
    return out


def _member_sends(unit: Unit) -> bool:
    """tenure's own dispatch-inside-batch already reports a tenure member's dispatches."""
    return unit.is_member and bool(unit.dispatches) and unit.framework != "tenure job"


def _reads_and_writes(cursor: list[Costly]) -> bool:
    return {c.effect for c in cursor} >= {"method", "write"}


def _report(unit: Unit, rule: str, calls: list[Costly], what: str) -> list[Finding]:
    return [_finding(rule, unit, c.line, f"{what} ({c.what})") for c in calls]


def _finding(rule: str, unit: Unit, line: int, what: str) -> Finding:
    """The message names the entry point or job and what it does; the rule's why (one
    sentence in the standard's terms) is printed beside it from the rule index."""
    message = f"{unit.framework} {unit.name} {what}."
    job = unit.name if unit.kind == "job" else None
    return finding(rule, message, FIXES[rule], Source(unit.path, line), job=job)

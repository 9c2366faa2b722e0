"""kill-chains' own checker: every chain either completed in order (each link started after
the previous one's body returned, finally once, no catch) or stopped at its failing link
(the later links cancelled and never run, catch once, finally once). That no link ran twice
without a recorded reason is the general checker's finding (chaos/checker.py): every link and
callback is in its expected set."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tenure.core import chains
from tenure.stores.base import get_job

from chaos.ledger import Execution, by_job


@dataclass
class ChainPlan:
    links: list[str]  # link ids, in order
    stops_at: int | None  # the index of the link that fails for good; None: it completes
    catch: str
    finally_: str


def plan(app: Any, handle: Any, stops_at: int | None) -> ChainPlan:
    shown = chains.info(get_job(app.store, handle.links[0].id).chain_text)
    assert shown is not None and shown.catch_id and shown.finally_id
    return ChainPlan([h.id for h in handle.links], stops_at, shown.catch_id, shown.finally_id)


def expected_states(p: ChainPlan) -> dict[str, str]:
    """What the general checker should find of each job of the chain."""
    if p.stops_at is None:
        out = dict.fromkeys(p.links, "succeeded")
    else:
        out = {
            link: "succeeded" if i < p.stops_at else "failed" if i == p.stops_at else "cancelled"
            for i, link in enumerate(p.links)
        }
        out[p.catch] = "succeeded"
    out[p.finally_] = "succeeded"
    return out


def check_chains(
    store: Any, plans: list[ChainPlan], runs: list[Execution]
) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    runs_of = by_job(runs)
    completed = stopped = 0
    for p in plans:
        where = f"chain of {p.links[0]}"
        last = p.links if p.stops_at is None else p.links[: p.stops_at + 1]
        for before, after in itertools.pairwise(last):
            done = [e.ended for e in runs_of.get(before, []) if e.ended is not None]
            started = [e.started for e in runs_of.get(after, [])]
            if started and (not done or min(started) < max(done)):
                problems.append(f"{where}: link {after} started before link {before} returned")
        if p.stops_at is not None:
            for later in p.links[p.stops_at + 1 :]:
                if runs_of.get(later):
                    problems.append(f"{where}: link {later} ran after its chain stopped")
            stopped += 1
        else:
            if get_job(store, p.catch) is not None:
                problems.append(f"{where}: catch {p.catch} was queued for a completed chain")
            completed += 1
        callbacks = [p.finally_] + ([p.catch] if p.stops_at is not None else [])
        for cb in callbacks:
            record = get_job(store, cb)
            ran = [e for e in runs_of.get(cb, []) if e.ended is not None]
            if record is None or record.state != "succeeded":
                problems.append(f"{where}: callback {cb} is {record and record.state}")
            elif not ran:
                problems.append(f"{where}: callback {cb} succeeded with no execution")
    notes = [f"chains: {completed} completed in order, {stopped} stopped with catch once"]
    return problems, notes

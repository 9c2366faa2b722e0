"""Bounded fault scenarios (the `ci` profile of chaos/scenarios.py) on every backend that
works here: nothing lost, no unexplained duplicate, no once() effect twice."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from chaos import kills  # noqa: F401  (registers the SIGKILL scenarios)
from chaos.harness import drop_store, skip_or_fail, store_url, store_works
from chaos.scenarios import PROFILES, Unavailable, run_one

pytestmark = pytest.mark.slow

SQLITE = [
    "kill-workers",
    "kill-children",
    "kill-periodic",
    "kill-prune",
    "kill-chains",
    "sigstop-group",
    "sigstop-supervisor",
    "deploy-short-grace",
    "deploy-long-grace",
    "memory",
    "timeout-ignored",
    "clock-skew",
]
# The networked stores get the scenarios their own code paths change.
NETWORKED = [
    "kill-workers",
    "kill-periodic",
    "kill-prune",
    "kill-chains",
    "sigstop-group",
    "store-restart",
    "clock-skew",
]
CASES = [("sqlite", s) for s in SQLITE] + [(b, s) for b in ("postgres", "redis") for s in NETWORKED]


def usable(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        return
    url = store_url(backend, tmp_path)
    why = store_works(url)
    drop_store(url)
    if why is not None:
        skip_or_fail(f"{backend} store not usable through tenure.App: {why}")


def storm_row(backend: str, scenario: str, tmp_path: Path) -> dict[str, Any]:
    """The scenario's result row. A SIGKILL storm whose kills all landed on workers that held
    no job (starting up, or idle between jobs under a light load) tested nothing; it runs
    again with the next seed, at most twice more, before the test says so."""
    params: dict[str, Any] = dict(PROFILES["ci"][scenario])
    for seed in range(3):
        try:
            row = run_one(scenario, backend, params, seed=seed, keep=tmp_path).row()
        except Unavailable as exc:
            skip_or_fail(str(exc))
        if not (scenario.startswith("kill") and missed_every_job(row)):
            break
    return row


def missed_every_job(row: dict[str, Any]) -> bool:
    """True for a clean run in which no kill cost a job its attempt; a run with any problem is
    never run again (its row is what the test judges)."""
    faults = ("lost", "unexplained_duplicates", "unmatched", "effects_twice")
    clean = all(row[k] == 0 for k in faults) and not row["problems"]
    return clean and row["explained_reruns"] == 0


@pytest.mark.parametrize(("backend", "scenario"), CASES, ids=[f"{b}-{s}" for b, s in CASES])
def test_scenario(backend: str, scenario: str, tmp_path: Path) -> None:
    usable(backend, tmp_path)
    row = storm_row(backend, scenario, tmp_path)
    detail = {k: row[k] for k in ("notes", "problems", "examples", "outcomes")}
    assert row["lost"] == 0, detail
    assert row["unexplained_duplicates"] == 0, detail
    assert row["unmatched"] == 0, detail
    assert row["effects_twice"] == 0, detail
    assert not row["problems"], detail
    if scenario.startswith("sigstop"):
        assert row["fenced"] >= 1, "the paused worker's late result was not refused"
    if scenario.startswith("kill") or scenario == "deploy-short-grace":
        assert row["faults"] > 0 and row["explained_reruns"] > 0, row
    if scenario == "deploy-long-grace":
        assert row["outcomes"].get("interrupted", 0) == 0, row["outcomes"]
    if os.environ.get("CHAOS_VERBOSE"):
        print(row)

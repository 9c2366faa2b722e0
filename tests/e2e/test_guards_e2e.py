"""Uniqueness, overlap, rate limits and once(), held in the store, with real processes."""

from __future__ import annotations

import collections
import itertools
import os
import random
import subprocess
import sys
import time

import pytest

from tenure.core import payload

from e2e.helpers import SRC, Project, state_is, wait_until

pytestmark = pytest.mark.slow

DISPATCHER = """
import importlib, os, sys, time
sys.path.insert(0, {dir!r})
jobs = importlib.import_module({module!r})
while not os.path.exists({go!r}):
    time.sleep(0.001)
ids = {{jobs.unique_order.dispatch(7).id for _ in range(50)}}
print(" ".join(sorted(ids)))
"""


def test_concurrent_dispatches_of_one_unique_key_store_one_job(project: Project) -> None:
    go = project.dir / "go"
    code = DISPATCHER.format(dir=str(project.dir), module=project.module_name, go=str(go))
    env = dict(os.environ, PYTHONPATH=str(SRC))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(4)
    ]
    time.sleep(0.5)  # let the four processes import and wait at the line; not a result wait
    go.touch()
    seen = set()
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        seen |= set(out.split())
    assert len(seen) == 1
    assert project.app.counts()["queued"] == 1
    again = project.jobs.unique_order.dispatch(7)
    assert again.deduplicated and again.id in seen
    assert not project.jobs.unique_order.dispatch(8).deduplicated


def test_unique_key_is_free_again_once_the_job_completed(project: Project) -> None:
    first = project.jobs.unique_order.dispatch(1)
    project.worker("--burst").wait(60)
    assert project.app.get_job(first.id).state == "succeeded"
    second = project.jobs.unique_order.dispatch(1)
    assert not second.deduplicated and second.id != first.id


def overlap_drained(project: Project, keys: list[str]) -> int:
    """One overlap-keyed job per key in `keys` (50 keys), drained by four burst workers of two
    slots: no two attempts of one key ran at once, and a deferral used no try. Returns how
    many deferrals there were."""
    project.jobs.per_customer.dispatch_many([(key, i) for i, key in enumerate(keys)])
    for _ in range(4):
        project.worker("--concurrency", "2", "--burst")
    wait_until(lambda: project.app.counts()["succeeded"] == len(keys), 300, f"{len(keys)} jobs")
    by_key: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    deferred = 0
    for record in project.app.store.list_jobs(limit=2 * len(keys)):
        info = project.app.get_job(record.id)
        assert info.tries_used == 1  # deferrals used no try
        for a in info.attempts:
            if a.outcome == "deferred":
                deferred += 1
                assert "overlap key" in (a.error or "")
                continue
            assert a.outcome == "succeeded" and a.ended_at is not None
            by_key[payload.decode(info.payload).args[0]].append((a.started_at, a.ended_at))
    assert len(by_key) == 50
    for spans in by_key.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end <= start, "two attempts with one overlap key ran at the same time"
    return deferred


def test_overlap_keys_never_run_concurrently_and_deferrals_use_no_try(project: Project) -> None:
    deferred = overlap_drained(project, [f"c{i % 50}" for i in range(1000)])
    print(f"overlap: 1,000 jobs, {deferred} deferrals")


def test_rate_limit_defers_and_never_fails(project: Project) -> None:
    project.jobs.limited.dispatch_many([(i,) for i in range(200)])
    for _ in range(2):
        project.worker("--concurrency", "4")
    wait_until(lambda: project.app.counts()["succeeded"] == 200, 120, "200 limited jobs")
    starts = sorted(
        a.started_at
        for job in project.app.store.list_jobs(limit=500)
        for a in project.app.get_job(job.id).attempts
        if a.outcome == "succeeded"
    )
    assert len(starts) == 200
    for i, start in enumerate(starts):
        window = [s for s in starts[i:] if s < start + 1.0]
        assert len(window) <= 20, f"{len(window)} starts within one second"
    assert project.app.counts()["failed"] == 0


def test_once_effect_is_skipped_by_the_rerun_after_a_crash(project: Project) -> None:
    h = project.jobs.charge_then_crash.dispatch()
    project.worker()
    wait_until(state_is(project.app, h.id, "succeeded"), 60, "the re-run")
    info = project.app.get_job(h.id)
    assert [a.outcome for a in info.attempts] == ["crashed", "succeeded"]
    assert len(project.ledger.events(h.id, "charge")) == 1
    assert [(e.key, e.attempt) for e in info.effects] == [("charge", 1)]


def test_once_effects_run_at_most_once_under_random_worker_kills(project: Project) -> None:
    handles = project.jobs.charge.dispatch_many([(i,) for i in range(1000)])
    rng = random.Random(7)
    workers = [project.worker("--lease", "2", "--concurrency", "2") for _ in range(2)]
    kills = 0
    deadline = time.monotonic() + 300
    while project.app.counts()["succeeded"] < 1000:
        assert time.monotonic() < deadline, "jobs did not finish under kills"
        time.sleep(rng.uniform(0.3, 0.8))  # the fault schedule, not a wait for a result
        if kills < 6:
            victim = workers.pop(rng.randrange(len(workers)))
            victim.kill_group()
            kills += 1
            workers.append(project.worker("--lease", "2", "--concurrency", "2"))
    charges = collections.Counter(line[0] for line in project.ledger.lines() if line[3] == "charge")
    assert max(charges.values()) == 1
    recorded = sum(len(project.app.get_job(h.id).effects) for h in handles)
    assert recorded == 1000  # every job claimed its effect once
    print(f"once(): 1,000 jobs, {kills} worker kills, {sum(charges.values())} charges")

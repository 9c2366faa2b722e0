"""Flow control with real worker processes (issue 31), on SQLite, PostgreSQL and Redis:
`concurrency=2` over two workers never runs 3 and does run 2; a limit per key is per key and
its backlog holds up no other job; five dispatches within 1 s with `debounce=2` run once, with
the last arguments, at least 1.5 s after the last dispatch, under one job id."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project, isolated_project, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = Path(__file__).with_name("flow_jobs_template.py")


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def flow(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with isolated_project(request, request.param, tmp_path, TEMPLATE) as project:
        yield project


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of the (start, end) spans open at one instant."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = most = 0
    for _, step in edges:  # an end at the same instant as a start comes first (-1 < 1)
        running += step
        most = max(most, running)
    return most


def spans(project: Project, start: str, end: str) -> list[tuple[float, float]]:
    opened: dict[tuple[str, int], float] = {}
    out = []
    for job_id, attempt, _, event, at in project.ledger.lines():
        if event == start:
            opened[(job_id, attempt)] = at
        elif event == end:
            out.append((opened.pop((job_id, attempt)), at))
    return out


def test_concurrency_2_over_two_workers_never_runs_3_and_does_run_2(flow: Project) -> None:
    flow.jobs.call_model.dispatch_many([(i,) for i in range(60)])
    for _ in range(2):
        flow.worker("--concurrency", "4")
    wait_until(lambda: flow.app.counts()["succeeded"] == 60, 180, "60 limited jobs")
    ran = spans(flow, "start", "end")
    assert len(ran) == 60
    assert most_at_once(ran) == 2
    # parked, not deferred: no attempt but the one that ran, no try but its own
    for job in flow.app.store.list_jobs(limit=100):
        info = flow.app.get_job(job.id)
        assert [a.outcome for a in info.attempts] == ["succeeded"] and info.tries_used == 1


def test_a_limit_per_key_is_per_key_and_its_backlog_holds_up_nothing(flow: Project) -> None:
    flow.jobs.sync_account.dispatch_many([("a", i) for i in range(30)])
    flow.jobs.sync_account.dispatch_many([("b", i) for i in range(10)])
    flow.jobs.plain.dispatch_many([(i,) for i in range(20)])
    for _ in range(2):
        flow.worker("--concurrency", "4")
    wait_until(lambda: flow.app.counts()["succeeded"] == 60, 180, "60 jobs")
    a, b = spans(flow, "start:a", "end:a"), spans(flow, "start:b", "end:b")
    assert most_at_once(a) == 1 and most_at_once(b) == 1
    assert most_at_once(a + b) == 2  # the two keys did run side by side
    plain_done = max(at for *_, event, at in flow.ledger.lines() if event == "plain")
    assert plain_done < max(end for _, end in a)  # the plain jobs did not wait for a's backlog


def test_five_dispatches_within_one_second_run_once_with_the_last_arguments(
    flow: Project,
) -> None:
    flow.worker()
    handles = []
    for version in range(5):
        handles.append(flow.jobs.reindex.dispatch(7, version))
        time.sleep(0.2)  # the dispatches' own spacing, within the window; not a result wait
    last = time.time() - 0.2
    assert len({h.id for h in handles}) == 1
    wait_until(lambda: flow.app.get_job(handles[0].id).state == "succeeded", 60, "the one run")
    runs = [(event, at) for _, _, _, event, at in flow.ledger.lines()]
    assert [event for event, _ in runs] == ["reindex:7:4"]
    assert runs[0][1] - last >= 1.5


def test_a_kill_storm_never_shows_more_than_3_running_and_loses_nothing(flow: Project) -> None:
    handles = flow.jobs.storm.dispatch_many([(i,) for i in range(120)])
    rng = random.Random(31)
    workers = [flow.worker("--lease", "2", "--concurrency", "3") for _ in range(2)]
    kills: list[float] = []
    deadline = time.monotonic() + 300
    while flow.app.counts()["succeeded"] < 120:
        assert time.monotonic() < deadline, "jobs did not finish under kills"
        time.sleep(rng.uniform(0.4, 0.9))  # the fault schedule, not a wait for a result
        if len(kills) < 5 and (held := holder_pids(flow)):
            # a worker in the middle of a job, so that the kill does cut bodies short
            victim = next((w for w in workers if w.proc.pid in held), None)
            if victim is None:
                continue
            workers.remove(victim)
            victim.kill_group()
            kills.append(time.time())  # every body of the victim had stopped by now
            workers.append(flow.worker("--lease", "2", "--concurrency", "3"))
    ran = spans(flow, "start", "end")
    lines = flow.ledger.lines()
    ended = {(job_id, attempt) for job_id, attempt, _, event, _ in lines if event == "end"}
    cut = [  # a body the kill stopped: it ran from its start to that kill at most
        (at, min((k for k in kills if k >= at), default=time.time()))
        for job_id, attempt, _, event, at in lines
        if event == "start" and (job_id, attempt) not in ended
    ]
    assert most_at_once(ran + cut) <= 3
    assert most_at_once(ran) == 3  # the limit was reached, not just kept
    for h in handles:
        info = flow.app.get_job(h.id)
        assert info.state == "succeeded"  # nothing lost
        runs = [a.outcome for a in info.attempts]
        assert runs[-1] == "succeeded" and all(o == "crashed" for o in runs[:-1]), runs
    assert cut, f"no kill cut a body short ({len(kills)} kills): the storm tested nothing"
    print(f"kill storm: 120 jobs, {len(kills)} kills, {len(cut)} bodies cut")


def holder_pids(project: Project) -> set[int]:
    """The worker processes (supervisor pids) whose attempt's body is running right now (it
    noted its start and not yet its end)."""
    lines = project.ledger.lines()
    ended = {(job_id, attempt) for job_id, attempt, _, event, _ in lines if event == "end"}
    started = {(j, a) for j, a, _, event, _ in lines if event == "start"} - ended
    out = set()
    for job in project.app.store.list_jobs(state="running", limit=10):
        last = project.app.get_job(job.id).attempts[-1]
        if (job.id, last.number) in started:
            out.add(last.pid)
    return out

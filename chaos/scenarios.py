"""The scenarios, each a function of a backend context and parameters, and two profiles of
parameters: `ci` (the bounded form tests/chaos runs) and `full` (the issue's acceptance).
The SIGKILL storms live in chaos/kills.py, the topology ones in chaos/topologies.py; both
register here through `scenario()`."""

from __future__ import annotations

import contextlib
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenure.stores.base import get_job

from chaos import faults
from chaos.harness import ROOT, Project, drop_store, store_url, store_works
from chaos.runner import Load, RunResult, run_scenario


@dataclass
class Context:
    backend: str
    directory: Path
    seed: int = 0


Scenario = Callable[..., RunResult]
SCENARIOS: dict[str, Scenario] = {}
NEEDS_SERVER = {"store-restart"}
BACKEND_ONLY = {"store-restart": ("postgres", "redis")}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        return fn

    return register


def servers_module() -> Any:
    """tests/servers.py: throwaway PostgreSQL/Redis servers (imported, never edited)."""
    tests_dir = str(ROOT / "tests")
    if tests_dir not in sys.path:
        sys.path.insert(0, tests_dir)
    import servers

    return servers


@contextlib.contextmanager
def opened(ctx: Context, server_url: str | None = None) -> Iterator[Project]:
    url = store_url(ctx.backend, ctx.directory, server_url)
    why = store_works(url)
    if why is not None:
        drop_store(url)
        raise Unavailable(f"{ctx.backend}: tenure.App({url.split('?')[0]}...) does not work: {why}")
    p = Project(ctx.directory, url)
    try:
        yield p
    finally:
        p.stop_all()
        drop_store(url)


class Unavailable(Exception):
    """The backend cannot run this scenario here (its store is unfinished, no server...)."""


def worker_args(lease: float, concurrency: int, grace: float = 2.0, *extra: str) -> list[str]:
    return [
        "--lease",
        str(lease),
        "--concurrency",
        str(concurrency),
        "--grace",
        str(grace),
        "--log-level",
        "WARNING",
        *extra,
    ]


def short_work(ms: float) -> Callable[[int, random.Random], tuple[Any, ...]]:
    return lambda i, rng: (i, rng.uniform(0, ms))


# -- SIGSTOP ----------------------------------------------------------------------------------
def _stop(ctx: Context, name: str, whole_group: bool, **p: Any) -> RunResult:
    params = {"jobs": 40, "stops": 3, "workers": 2, "concurrency": 2, "lease": 2.0}
    params |= {"job_ms": 1500, **p}

    def after(run: Any, verdict: Any) -> None:
        if verdict.fenced == 0:
            verdict.problems.append("no late result was refused: fencing was not exercised")

    with opened(ctx) as project:
        return run_scenario(
            name=name,
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["jobs"],
                    args=lambda i, rng: (i, params["job_ms"] * rng.uniform(0.8, 1.2)),
                    chunk=5,
                    rate=4,
                )
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.stop_past_lease(params["stops"], params["lease"], whole_group),
            seed=ctx.seed,
            after=after,
        )


@scenario("sigstop-group")
def sigstop_group(ctx: Context, **p: Any) -> RunResult:
    """SIGSTOP a busy worker and its children past the lease, SIGCONT after the re-run."""
    return _stop(ctx, "sigstop-group", True, **p)


@scenario("sigstop-supervisor")
def sigstop_supervisor(ctx: Context, **p: Any) -> RunResult:
    """SIGSTOP only the supervisor: its child finishes the job meanwhile and the supervisor
    reports success late, after another worker re-ran the job."""
    return _stop(ctx, "sigstop-supervisor", False, **p)


# -- SIGTERM deploy waves ---------------------------------------------------------------------
def _deploy(ctx: Context, name: str, grace: float, job_ms: float, **p: Any) -> RunResult:
    params = {"jobs": 300, "waves": 4, "every_s": 2.0, "workers": 3, "concurrency": 3}
    params |= {"lease": 3.0, "grace": grace, "job_ms": job_ms, **p}
    with opened(ctx) as project:
        return run_scenario(
            name=name,
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["jobs"],
                    args=lambda i, rng: (i, params["job_ms"] * rng.uniform(0.5, 1.0)),
                    chunk=20,
                    rate=5,
                )
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"], params["grace"]),
            fault=faults.deploy_waves(params["every_s"], params["waves"]),
            seed=ctx.seed,
        )


@scenario("deploy-short-grace")
def deploy_short_grace(ctx: Context, **p: Any) -> RunResult:
    """SIGTERM waves with --grace shorter than the jobs: they are handed back (interrupted)."""
    return _deploy(ctx, "deploy-short-grace", p.pop("grace", 0.3), p.pop("job_ms", 1500), **p)


@scenario("deploy-long-grace")
def deploy_long_grace(ctx: Context, **p: Any) -> RunResult:
    """SIGTERM waves with --grace longer than the jobs: running jobs finish, none re-run."""
    return _deploy(ctx, "deploy-long-grace", p.pop("grace", 5.0), p.pop("job_ms", 400), **p)


# -- store restart ----------------------------------------------------------------------------
@scenario("store-restart")
def store_restart(ctx: Context, **p: Any) -> RunResult:
    """Stop the PostgreSQL/Redis server mid-run and start it again on the same data (Redis
    with an fsync'd append-only file)."""
    params = {"jobs": 1500, "restarts": 2, "every_s": 3.0, "down_s": 2.0, "workers": 3}
    params |= {"concurrency": 3, "lease": 3.0, "job_ms": 20, **p}
    servers = servers_module()
    if ctx.backend == "postgres":
        server = servers.ThrowawayPostgres()
    elif ctx.backend == "redis":
        server = servers.ThrowawayRedis(appendonly=True)
    else:
        raise Unavailable("store-restart is for PostgreSQL and Redis (SQLite is a file)")
    try:
        server.start()
        with opened(ctx, server.url) as project:
            return run_scenario(
                name="store-restart",
                backend=ctx.backend,
                project=project,
                params=params,
                loads=[Load(params["jobs"], args=short_work(params["job_ms"]), chunk=50, rate=20)],
                workers=params["workers"],
                worker_args=worker_args(params["lease"], params["concurrency"]),
                fault=faults.store_outage(
                    params["every_s"], params["down_s"], params["restarts"], server
                ),
                seed=ctx.seed,
            )
    finally:
        server.close()


# -- child over its memory cap, jobs that ignore their timeout ----------------------------------
@scenario("memory")
def memory(ctx: Context, **p: Any) -> RunResult:
    """Jobs that allocate past --memory among ordinary jobs: the child is killed (crashed),
    the job fails after its tries, the worker and the other jobs carry on."""
    params = {"jobs": 300, "hogs": 4, "hog_mb": 300, "memory_mb": 150, "workers": 2}
    params |= {"concurrency": 2, "lease": 3.0, **p}
    with opened(ctx) as project:
        return run_scenario(
            name="memory",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["hogs"],
                    job="hog",
                    args=lambda i, rng: (params["hog_mb"],),
                    expect="failed",
                    faulty=True,
                ),
                Load(params["jobs"], args=short_work(20)),
            ],
            workers=params["workers"],
            worker_args=worker_args(
                params["lease"], params["concurrency"], 2.0, "--memory", str(params["memory_mb"])
            ),
            fault=None,
            seed=ctx.seed,
            after=_hogs_crashed,
        )


def _hogs_crashed(run: Any, verdict: Any) -> None:
    _workers_survived(run, verdict)
    for job_id in run.faulty:
        attempts = run.project.app.get_job(job_id).attempts
        if not attempts or any(
            a.outcome != "crashed" or "--memory" not in (a.error or "") for a in attempts
        ):
            verdict.problems.append(
                f"{job_id}: attempts {[(a.outcome, a.error) for a in attempts]}, expected only "
                "crashed over --memory"
            )


@scenario("timeout-ignored")
def timeout_ignored(ctx: Context, **p: Any) -> RunResult:
    """Jobs that swallow JobTimeout and keep going: killed at timeout + kill_after
    (timed_out, counted), the worker and the other jobs carry on."""
    params = {"jobs": 300, "stubborn": 4, "workers": 2, "concurrency": 2, "lease": 3.0, **p}
    with opened(ctx) as project:
        return run_scenario(
            name="timeout-ignored",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["stubborn"],
                    job="stubborn",
                    args=lambda i, rng: (30.0,),
                    expect="failed",
                    faulty=True,
                ),
                Load(params["jobs"], args=short_work(20)),
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=None,
            seed=ctx.seed,
            after=_stubborn_killed,
        )


def _stubborn_killed(run: Any, verdict: Any) -> None:
    """Each stubborn execution saw the soft signal, ignored it, and never reached its end."""
    _workers_survived(run, verdict)
    from chaos.ledger import read_ledger

    for e in read_ledger(run.project.ledger_path):
        if e.job_id not in run.faulty:
            continue
        if "ignored-timeout" not in e.events:
            verdict.problems.append(f"{e.job_id} attempt {e.attempt}: no soft timeout arrived")
        if e.ended is not None:
            verdict.problems.append(f"{e.job_id} attempt {e.attempt}: ran to its end, not killed")
    for job_id in run.faulty:
        outcomes = [a.outcome for a in run.project.app.get_job(job_id).attempts]
        if outcomes != ["timed_out"] * len(outcomes) or not outcomes:
            verdict.problems.append(f"{job_id}: attempts {outcomes}, expected only timed_out")


def _workers_survived(run: Any, verdict: Any) -> None:
    died = run.died_of_a_job()
    if died:
        verdict.problems.append(
            f"{len(died)} worker(s) died with no fault aimed at them (pids {died[:5]})"
        )


# -- clock skew -------------------------------------------------------------------------------
@scenario("clock-skew")
def clock_skew(ctx: Context, **p: Any) -> RunResult:
    """Workers whose clocks are 120 s ahead and behind (time.time shim) share the store,
    with SIGKILLs: leases are measured on the store's clock, so neither worker may take a
    live lease early or keep a dead one late."""
    params = {"jobs": 800, "every_ms": 1500, "workers": 3, "concurrency": 3, "lease": 2.0}
    params |= {"skews_s": [120.0, -120.0, 0.0], "job_ms": 300, **p}
    with opened(ctx) as project:
        return run_scenario(
            name="clock-skew",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[Load(params["jobs"], args=short_work(params["job_ms"]))],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.kill_random(params["every_ms"] / 1000, "worker"),
            skews=params["skews_s"],
            seed=ctx.seed,
        )


# -- profiles ---------------------------------------------------------------------------------
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "ci": {
        # 100 ms jobs: enough in flight that every kill interrupts something, even when fast
        "kill-workers": {"jobs": 600, "every_ms": 500, "job_ms": 100},
        "kill-children": {"jobs": 200},
        "kill-periodic": {"jobs": 600, "every_ms": 500},
        "kill-prune": {"jobs": 600, "every_ms": 500},
        "kill-chains": {"chains": 100, "links": 3, "every_ms": 500},
        "sigstop-group": {"jobs": 12, "stops": 1},
        "sigstop-supervisor": {"jobs": 12, "stops": 1},
        "deploy-short-grace": {"jobs": 60, "waves": 2},
        "deploy-long-grace": {"jobs": 60, "waves": 2},
        "store-restart": {"jobs": 300, "restarts": 1},
        "memory": {"jobs": 60, "hogs": 2},
        "timeout-ignored": {"jobs": 60, "stubborn": 2},
        "clock-skew": {"jobs": 150},
    },
    "full": {
        "kill-workers": {"jobs": 10_000, "every_ms": 500},
        "kill-groups": {"jobs": 3000, "every_ms": 500},
        "kill-children": {"jobs": 2000},
        "kill-periodic": {"jobs": 3000, "every_ms": 500},
        "kill-prune": {"jobs": 3000, "every_ms": 500},
        "kill-chains": {"chains": 1000, "links": 4, "every_ms": 500},
        "sigstop-group": {"jobs": 40, "stops": 3},
        "sigstop-supervisor": {"jobs": 40, "stops": 3},
        "deploy-short-grace": {},
        "deploy-long-grace": {},
        "store-restart": {},
        "memory": {},
        "timeout-ignored": {},
        "clock-skew": {},
    },
}


def run_one(
    name: str, backend: str, params: dict[str, Any], seed: int = 0, keep: Path | None = None
) -> RunResult:
    """Run one scenario; with `keep`, its directory (ledger, fault log, worker logs) stays."""
    if name in BACKEND_ONLY and backend not in BACKEND_ONLY[name]:
        raise Unavailable(f"{name} does not apply to {backend}")
    if keep is not None:
        directory = keep / f"{backend}-{name}"
        shutil.rmtree(directory, ignore_errors=True)  # a fresh ledger for every run
        directory.mkdir(parents=True)
        return SCENARIOS[name](Context(backend, directory, seed), **params)
    with tempfile.TemporaryDirectory(prefix=f"chaos-{name}-") as tmp:
        return SCENARIOS[name](Context(backend, Path(tmp), seed), **params)


# -- corrupted rows ---------------------------------------------------------------------------
@scenario("corrupt-rows")
def corrupt_rows(ctx: Context, **p: Any) -> RunResult:
    """Corrupted rows written straight into the store among ordinary jobs, with one worker
    SIGKILLed mid-run so rescue runs over them too: no worker may crash, every ordinary job
    must succeed, every damaged job should end (failed, with a reason) rather than loop."""
    from chaos import corrupt

    params = {"jobs": 200, "workers": 2, "concurrency": 2, "lease": 2.0, "kill_every_s": 3.0}
    params |= p
    kinds = params.get("kinds") or list(corrupt.CORRUPTIONS)
    victims: dict[str, str] = {}

    def before(run: Any) -> None:
        run.only_dispatched = True
        apply = corrupt.corrupter(run.project)
        for kind in kinds:
            handle = run.project.jobs.work.dispatch(-1, 300.0)
            apply(kind, handle.id)
            victims[handle.id] = kind
            run.ignored.add(handle.id)

    def after(run: Any, verdict: Any) -> None:
        _workers_survived(run, verdict)
        store = run.project.app.store
        for job_id, kind in victims.items():
            try:
                record = get_job(store, job_id)
            except Exception as exc:
                verdict.problems.append(f"{kind}: get_job raised {type(exc).__name__}: {exc}")
                continue
            state = None if record is None else record.state
            reason = "" if record is None else (record.last_error or "")[:100]
            run.notes.append(f"corrupt {kind}: {state} {reason}")
        for w in run.project.workers:
            text = w.log()
            if "Traceback" in text and "unexpected error around job" in text:
                run.notes.append(f"worker log {w.log_path.name}: a slot hit an unexpected error")

    with opened(ctx) as project:
        return run_scenario(
            name="corrupt-rows",
            backend=ctx.backend,
            project=project,
            params={k: v for k, v in params.items() if k != "kinds"},
            loads=[
                Load(params["jobs"], args=short_work(params.get("job_ms", 20)), chunk=10, rate=4)
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.kill_random(params["kill_every_s"], "worker")
            if params["kill_every_s"]
            else None,
            seed=ctx.seed,
            before=before,
            after=after,
            settle_s=params.get("settle_s", 60.0),
        )

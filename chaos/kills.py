"""The SIGKILL storms: a random worker supervisor, its whole process group, or one child,
killed every X ms while a steady load runs; variants add the workers' own periodic dispatch
(kill-periodic) and, on top of it, retention pruning finished jobs (kill-prune)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from chaos import faults
from chaos.runner import Load, RunResult, run_scenario
from chaos.scenarios import Context, opened, scenario, short_work, worker_args


# -- SIGKILL ----------------------------------------------------------------------------------
def _kill(
    ctx: Context,
    name: str,
    target: str,
    *,
    before: Callable[[Any], None] | None = None,
    after: Callable[[Any, Any], None] | None = None,
    **p: Any,
) -> RunResult:
    params = {"jobs": 2000, "every_ms": 500, "workers": 3, "concurrency": 4, "lease": 2.0}
    params |= {"job_ms": 20, "target": target, "rate": 120, **p}
    with opened(ctx) as project:
        return run_scenario(
            name=name,
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["jobs"],
                    args=short_work(params["job_ms"]),
                    chunk=20,
                    rate=params["rate"] / 20,  # a steady load, not one backlog
                )
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.kill_random(params["every_ms"] / 1000, target),
            seed=ctx.seed,
            before=before,
            after=after,
        )


@scenario("kill-workers")
def kill_workers(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL a random worker supervisor every X ms (its children die with it)."""
    return _kill(ctx, "kill-workers", "worker", **p)


@scenario("kill-groups")
def kill_groups(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL a random worker's whole process group (host loss, OOM of the cgroup)."""
    return _kill(ctx, "kill-groups", "group", **p)


@scenario("kill-children")
def kill_children(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL a random child process (the kernel's OOM killer picking the job)."""
    p.setdefault("every_ms", 300)
    p.setdefault("job_ms", 100)
    return _kill(ctx, "kill-children", "child", **p)


@scenario("kill-periodic")
def kill_periodic(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL random workers while their tickers dispatch a periodic job every second, among
    ordinary jobs: each due time dispatched once at most, no run lost or failed, no re-run
    that a killed attempt does not explain."""
    from chaos.periodic_check import check_periodic

    def before(run: Any) -> None:
        run.project.worker_env["CHAOS_PERIODIC"] = "1"
        run.only_dispatched = True  # the periodic runs are the tickers', not the generator's

    def after(run: Any, verdict: Any) -> None:
        problems, notes = check_periodic(
            run.project.app.store, "every_second", run.project.dir / "periodic.txt"
        )
        verdict.problems += problems
        run.notes += notes

    p.setdefault("job_ms", 50)
    p.setdefault("rate", 60)
    return _kill(ctx, "kill-periodic", "worker", before=before, after=after, **p)


@scenario("kill-prune")
def kill_prune(ctx: Context, **p: Any) -> RunResult:
    """kill-periodic with retention on (succeeded jobs kept 2 s): the workers prune finished
    jobs and periodic runs on their own ticks while SIGKILLs land. Nothing lost, nothing run
    twice (the checker reads each job as the store held it when it finished), pruning really
    ran, and each periodic job's latest run is still in the store."""
    from chaos.periodic_check import check_periodic
    from chaos.retention_check import RecordingStore, check_pruning

    keep_s = float(p.pop("keep_s", 2.0))
    recording: list[RecordingStore] = []

    def before(run: Any) -> None:
        run.project.worker_env["CHAOS_PERIODIC"] = "1"
        run.project.worker_env["CHAOS_KEEP_S"] = repr(keep_s)  # the tickers' runs
        run.only_dispatched = True
        run.project.app.keep = replace(run.project.app.keep, succeeded=keep_s)  # the load's
        recording.append(RecordingStore.install(run.project.app))

    def after(run: Any, verdict: Any) -> None:
        store = recording[0]
        problems, notes = check_periodic(store, "every_second", run.project.dir / "periodic.txt")
        more_problems, more_notes = check_pruning(store, "every_second")
        store.stop()
        verdict.problems += problems + more_problems
        run.notes += notes + more_notes

    p.setdefault("job_ms", 50)
    p.setdefault("rate", 60)
    return _kill(ctx, "kill-prune", "worker", before=before, after=after, **p)


@scenario("kill-chains")
def kill_chains(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL random workers while chains of `links` jobs run: every chain completes in
    order (finally once, no catch), or stops at the link that fails on purpose (the later
    links cancelled and never run, catch once, finally once); no link runs twice without a
    recorded reason (the general checker)."""
    from chaos.chain_check import check_chains, expected_states, plan

    # kept in p: they are reported with the run's parameters
    n_chains = int(p.setdefault("chains", 100))
    links = int(p.setdefault("links", 3))
    stop_every = int(p.setdefault("stop_every", 4))  # every 4th chain has a link that fails
    job_ms = float(p.get("job_ms", 100))
    plans: list[Any] = []

    def before(run: Any) -> None:
        jobs, app = run.project.jobs, run.project.app
        for k in range(n_chains):
            stops_at = (k % links) if stop_every and k % stop_every == 0 else None
            sigs = [
                jobs.chain_fail.sig(k) if i == stops_at else jobs.work.sig(k, job_ms)
                for i in range(links)
            ]
            handle = app.chain(
                sigs, catch=jobs.work.sig(-1 - k, 10.0), finally_=jobs.work.sig(-1 - k, 10.0)
            )
            chain = plan(app, handle, stops_at)
            plans.append(chain)
            run.expected.update(expected_states(chain))

    def after(run: Any, verdict: Any) -> None:
        from chaos.ledger import read_ledger

        problems, notes = check_chains(
            run.project.app.store, plans, read_ledger(run.project.ledger_path)
        )
        verdict.problems += problems
        run.notes += notes

    p.setdefault("jobs", 0)  # the chains are the load
    p.setdefault("job_ms", 100)
    return _kill(ctx, "kill-chains", "worker", before=before, after=after, **p)

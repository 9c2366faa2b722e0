"""Chaos on the production topologies (tests/topologies.py starts each on loopback):

- `cluster-kill-storm`: the SIGKILL storm of `kill-workers`, on a three-master Redis Cluster;
- `sentinel-failover`: Sentinel fails the Redis master over to its replica (SENTINEL
  FAILOVER) again and again under load; the same workers must follow the new master;
- `pgbouncer-restart`: the PostgreSQL behind a PgBouncer in transaction pooling restarts
  under load (store-restart's fault), tenure connected through the pooler, LISTEN direct.

Each scenario records its rows under the backend it runs (redis, postgres) with its own name.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Callable, Iterator
from typing import Any

from chaos import faults
from chaos.harness import ROOT, Project, store_works
from chaos.runner import Load, Run, RunResult, run_scenario
from chaos.scenarios import (
    BACKEND_ONLY,
    Context,
    Unavailable,
    scenario,
    short_work,
    worker_args,
)

BACKEND_ONLY.update(
    {
        "cluster-kill-storm": ("redis",),
        "sentinel-failover": ("redis",),
        "pgbouncer-restart": ("postgres",),
    }
)


def topologies_module() -> Any:
    """tests/topologies.py: the throwaway Cluster, Sentinel and PgBouncer (imported only)."""
    tests_dir = str(ROOT / "tests")
    if tests_dir not in sys.path:
        sys.path.insert(0, tests_dir)
    import topologies

    return topologies


@contextlib.contextmanager
def started(make: Callable[[], Any]) -> Iterator[Any]:
    try:
        server = make()
        server.start()
    except Exception as exc:
        raise Unavailable(f"cannot start the topology: {exc}") from exc
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def project_at(url: str, ctx: Context) -> Iterator[Project]:
    why = store_works(url)
    if why is not None:
        raise Unavailable(f"{ctx.backend}: tenure.App({url.split('?')[0]}...) fails: {why}")
    p = Project(ctx.directory, url)
    try:
        yield p
    finally:
        p.stop_all()


def prefixed(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}prefix=chaos_{secrets.token_hex(4)}"


@scenario("cluster-kill-storm")
def cluster_kill_storm(ctx: Context, **p: Any) -> RunResult:
    """SIGKILL a random worker every X ms while the store is a three-master Redis Cluster."""
    params = {"jobs": 3000, "every_ms": 500, "workers": 3, "concurrency": 4, "lease": 2.0}
    params |= {"job_ms": 20, "rate": 120, **p}
    topologies = topologies_module()
    with (
        started(topologies.ThrowawayRedisCluster) as cluster,
        project_at(prefixed(cluster.url), ctx) as project,
    ):
        return run_scenario(
            name="cluster-kill-storm",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["jobs"],
                    args=short_work(params["job_ms"]),
                    chunk=20,
                    rate=params["rate"] / 20,
                )
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.kill_random(params["every_ms"] / 1000, "worker"),
            seed=ctx.seed,
        )


def sentinel_failovers(every_s: float, times: int, topology: Any) -> Callable[[Run], None]:
    def fault(run: Run) -> None:
        for _ in range(times):
            if run.stop_faults.wait(every_s):
                return
            pids = [w.pid for w in run.live()]
            old = topology.master()
            new = topology.failover()
            run.record_fault("sentinel-failover", [], affected=pids, old=old, new=new)

    return fault


@scenario("sentinel-failover")
def sentinel_failover(ctx: Context, **p: Any) -> RunResult:
    """Fail the Redis master over to its replica (SENTINEL FAILOVER) every X s under load;
    workers must follow the new master without a restart."""
    params = {"jobs": 1500, "failovers": 3, "every_s": 4.0, "workers": 3, "concurrency": 3}
    # 100 jobs a second: the load lasts through every failover
    params |= {"lease": 3.0, "job_ms": 20, "rate": 2, "wait_replicas": 1, **p}
    topologies = topologies_module()

    def same_workers(run: Any, verdict: Any) -> None:
        restarted = len(run.project.workers) - params["workers"]
        if restarted > 0:
            verdict.problems.append(f"{restarted} worker(s) had to be started again")

    with (
        started(topologies.ThrowawayRedisSentinel) as topology,
        # wait_replicas=1 by default: what a failover promotes holds every write tenure made
        project_at(
            prefixed(f"{topology.url}?wait_replicas={params['wait_replicas']}"), ctx
        ) as project,
    ):
        return run_scenario(
            name="sentinel-failover",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[
                Load(
                    params["jobs"],
                    args=short_work(params["job_ms"]),
                    chunk=50,
                    rate=params["rate"],
                )
            ],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=sentinel_failovers(params["every_s"], params["failovers"], topology),
            seed=ctx.seed,
            after=same_workers,
        )


@scenario("pgbouncer-restart")
def pgbouncer_restart(ctx: Context, **p: Any) -> RunResult:
    """Stop the PostgreSQL behind PgBouncer (transaction pooling) mid-run and start it again;
    tenure reaches it through the pooler, LISTEN on a direct connection."""
    params = {"jobs": 1500, "restarts": 2, "every_s": 3.0, "down_s": 2.0, "workers": 3}
    # PgBouncer's own default (15 s between server login tries) unless set
    params |= {"concurrency": 3, "lease": 3.0, "job_ms": 20, "server_login_retry": None, **p}
    topologies = topologies_module()
    from chaos.scenarios import servers_module

    servers = servers_module()
    schema = f"chaos_{secrets.token_hex(4)}"
    with (
        started(servers.ThrowawayPostgres) as postgres,
        started(
            lambda: topologies.ThrowawayPgBouncer(
                postgres.url, server_login_retry=params["server_login_retry"]
            )
        ) as bouncer,
        project_at(
            topologies.through_pgbouncer(f"{bouncer.url}?schema={schema}", postgres.url), ctx
        ) as project,
    ):
        return run_scenario(
            name="pgbouncer-restart",
            backend=ctx.backend,
            project=project,
            params=params,
            loads=[Load(params["jobs"], args=short_work(params["job_ms"]), chunk=50, rate=20)],
            workers=params["workers"],
            worker_args=worker_args(params["lease"], params["concurrency"]),
            fault=faults.store_outage(
                params["every_s"], params["down_s"], params["restarts"], postgres
            ),
            seed=ctx.seed,
        )

"""The Laravel rules about job code: HTTP calls against the job's timeout, unique locks
against the cache store, and batches (their table, their callbacks)."""

from __future__ import annotations

from tenure.doctor.laravel.jobs import UNIQUE
from tenure.doctor.laravel.project import (
    WORKER_TIMEOUT_DEFAULT_S,
    Project,
    Runner,
    own_timeout,
    serves,
)
from tenure.doctor.model import Finding, Source, Value
from tenure.doctor.rules import finding


def batch_findings(p: Project) -> list[Finding]:
    out: list[Finding] = []
    if p.batches and p.config.batch_driver == "database" and not p.batch_table_found:
        table = p.config.batch_table
        out.append(
            finding(
                "laravel-batch-table-missing",
                f"Bus::batch is used but no migration under database/ creates the {table} table: "
                "dispatching the batch fails.",
                "php artisan make:queue-batches-table && php artisan migrate",
                p.batches[0].source,
            )
        )
    for site in p.batches:
        for at in site.captures_this:
            out.append(
                finding(
                    "laravel-batch-callback-this",
                    "a batch callback uses $this: the closure is serialized with the whole object "
                    "and run later by a worker, where that object's state is stale or "
                    "unserializable.",
                    "copy what the callback needs into local variables and `use (...)` them, or "
                    "make it a static function",
                    at,
                )
            )
    return out


def http_findings(p: Project, all_runners: list[Runner]) -> list[Finding]:
    out: list[Finding] = []
    for job in p.jobs:
        bound = own_timeout(job)
        if bound is None:
            # The workers that run the job bound it, the shortest first. A job no runner
            # visibly serves (its queue or connection unresolved) runs on one of them, which
            # one unknown: only a call outliving every worker's timeout is certain to outlive.
            known = [r for r in all_runners if r.timeout_known]
            served = [r.timeout for r in known if serves(r, p, job)]
            pick = min if served else max
            served = served or [r.timeout for r in known]
            # A worker whose timeout is written but unresolved (`'timeout' => min(max(env(..),
            # ..), ..)`) bounds its jobs at a clock nobody can read: not queue:work's 60 s.
            unread = not served and any(not r.timeout_known for r in all_runners)
            bound = (
                pick(served, key=lambda v: v.amount or float("inf"))
                if served
                else Value("worker timeout", None, "s", Source(note="written, not resolved"))
                if unread
                else Value(
                    "queue:work --timeout",
                    WORKER_TIMEOUT_DEFAULT_S,
                    "s",
                    Source(note="queue:work default"),
                )
            )
        for call in job.calls:
            if call.timeout.amount is None:
                out.append(
                    finding(
                        "laravel-client-timeout-missing",
                        f"job {job.name} calls {call.call} with no timeout: it can wait until the "
                        "job is killed, and the request may still complete on the other side.",
                        "pass a timeout: ['timeout' => 10] for Guzzle, CURLOPT_TIMEOUT for curl, "
                        "or "
                        "use Http::timeout(10)",
                        call.source,
                        clocks=(call.timeout,),
                        job=job.name,
                    )
                )
            elif bound.amount is not None and call.timeout.amount >= bound.amount:
                out.append(
                    finding(
                        "laravel-client-timeout-not-below-job",
                        f"job {job.name} calls {call.call} bounded at {call.timeout.amount:g} s, "
                        "but "
                        f"the job itself is killed at {bound.amount:g} s: the call may outlive it.",
                        f"->timeout({max(int(bound.amount / 2), 1)}) or a longer job timeout",
                        call.source,
                        clocks=(call.timeout, bound),
                        job=job.name,
                    )
                )
    return out


def unique_findings(p: Project) -> list[Finding]:
    driver = p.config.cache_driver
    if driver is None or not driver.known or driver.value not in ("array", "file"):
        return []
    containers = sum(w.containers for w in p.workers if w.platform in ("compose", "kubernetes"))
    if driver.value == "file" and containers < 2:
        return []
    where = (
        "every process keeps its own"
        if driver.value == "array"
        else f"{containers} worker containers each keep their own"
    )
    return [
        finding(
            "laravel-unique-lock-store",
            f"job {job.name} is ShouldBeUnique, but the default cache store is '{driver.value}' "
            f"({driver.source}): {where} locks, so the job is not unique at all.",
            "use a shared cache with atomic locks (redis, memcached, database) or uniqueVia()",
            job.source,
            job=job.name,
        )
        for job in p.jobs
        if job.interfaces & UNIQUE and "uniqueVia" not in job.methods
    ]

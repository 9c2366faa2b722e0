"""The Laravel rules applied to what config.py, jobs.py and deploy.py read: the clocks (timeouts
against retry_after, Horizon and the platform's grace), tries, sync queues and SQS. The rules
about job code are in code_checks.py; the project model and its runners in project.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from tenure.doctor.laravel.code_checks import batch_findings, http_findings, unique_findings
from tenure.doctor.laravel.config import Connection
from tenure.doctor.laravel.jobs import prop_string
from tenure.doctor.laravel.php import EnvEntry, as_number
from tenure.doctor.laravel.project import (
    MARGIN_S,
    VARIABLE,
    Project,
    Runner,
    has_deadline,
    is_local,
    is_template,
    job_connection,
    own_timeout,
    runners,
    serves,
    undeployed_default,
)
from tenure.doctor.model import Finding, Source, Value
from tenure.doctor.rules import finding, once_per_unit
from tenure.doctor.walk import is_development_name

__all__ = ["Project", "check"]

# retry_after this long (invoiceninja's 90,000,000 s) is redelivery switched off, not a lease.
REDELIVERY_OFF_S = 30 * 24 * 3600.0

QUEUE_KEYS = ("QUEUE_CONNECTION", "QUEUE_DRIVER")  # the current name, and Laravel <= 5.6's


def check(p: Project) -> list[Finding]:
    out: list[Finding] = []
    all_runners = runners(p)
    p.served = frozenset(
        r.connection for r in all_runners
        if (c := p.config.connections.get(r.connection)) and c.driver != "sync"
    )  # fmt: skip
    out += _retry_after(p, all_runners)
    out += _tries(p, all_runners)
    out += once_per_unit(_grace(p, all_runners))
    out += _sync(p)
    out += batch_findings(p)
    out += http_findings(p, all_runners)
    out += unique_findings(p)
    out += _sqs(p, all_runners)
    out += _horizon_below_jobs(p, all_runners)
    if not p.workers:
        out.append(
            finding(
                "laravel-no-worker-found",
                "no `php artisan queue:work` or `horizon` command was found in Compose, "
                "Kubernetes, "
                "systemd, supervisord, Procfile or shell scripts; worker clocks were checked "
                "against queue:work's defaults.",
                "point doctor at the directory holding your deployment files",
                p.where,
            )
        )
    return out


def _compare(
    timeout: Value, connection: Connection | None, who: str, at: Source, job: str | None
) -> list[Finding]:
    if connection is None or connection.retry_after is None:
        return []
    lease = connection.retry_after
    assert lease.amount is not None
    if timeout.amount is None and lease.amount >= REDELIVERY_OFF_S:
        return []  # a lease of a month or more switches redelivery off on purpose
    clocks = (timeout, lease)
    if timeout.amount is None or timeout.amount >= lease.amount:
        what = (
            "has no timeout at all" if timeout.amount is None else f"may run {timeout.amount:g} s"
        )
        return [
            finding(
                "laravel-timeout-not-below-retry-after",
                f"{who} {what}, but connection '{connection.name}' hands a reserved job to another "
                f"worker after retry_after {lease.amount:g} s: a slow job runs twice at once.",
                f"set retry_after above the timeout (e.g. {int((timeout.amount or 0) + 30)}) or "
                f"the timeout below {lease.amount - MARGIN_S:g}",
                at,
                clocks=clocks,
                job=job,
            )
        ]
    if lease.amount - timeout.amount < MARGIN_S:
        return [
            finding(
                "laravel-timeout-margin",
                f"{who} times out at {timeout.amount:g} s, only "
                f"{lease.amount - timeout.amount:g} s "
                f"before retry_after {lease.amount:g} s of '{connection.name}'.",
                f"leave at least {MARGIN_S:g} s: timeout {lease.amount - MARGIN_S:g} or less",
                at,
                clocks=clocks,
                job=job,
            )
        ]
    return []


def _retry_after(p: Project, all_runners: list[Runner]) -> list[Finding]:
    out: list[Finding] = []
    for r in all_runners:
        connection = _lease_holder(p, r)
        if r.timeout_known:
            # A Horizon supervisor's finding goes on its 'timeout' line when it sets one.
            horizon = r.name.startswith("Horizon ") and r.timeout.source.path == r.source.path
            at = r.timeout.source if horizon else r.source
            out += _compare(r.timeout, connection, f"worker {r.name}", at, None)
        if r.once and not r.timeout.source.is_default:
            out.append(
                finding(
                    "laravel-timeout-with-once",
                    f"worker {r.name} runs with --once and --timeout: a worker that processes one "
                    "job does not enforce --timeout, so a stuck job runs until retry_after.",
                    "drop --once (use --max-jobs=1 to exit after one job with timeouts enforced)",
                    r.source,
                    clocks=(r.timeout,),
                )
            )
    for job in p.jobs:
        timeout = own_timeout(job)
        if timeout is not None:
            name = job_connection(p, job)
            connection = p.config.connections.get(name)
            if prop_string(job, "connection") is None and undeployed_default(p):
                # A job that sets its own timeout is written to be queued; a `sync` it reads
                # only from the config's fallback or an env template (`.env.example`, the
                # developer's copy) is not where production runs it.
                connection = _real_lease(p, connection, all_runners)
            elif connection is None and VARIABLE.match(name):
                # The default is passed through from the deployer's shell (a Compose
                # `QUEUE_CONNECTION=${QUEUE_CONNECTION}`): whichever connection it names,
                # the lease is the one every real connection agrees on.
                connection = _shared_lease(p, f"the default is {name}, set at deploy time")
            out += _compare(timeout, connection, f"job {job.name}", timeout.source, job.name)
    return out


def _lease_holder(p: Project, r: Runner) -> Connection | None:
    """The connection whose retry_after bounds the runner. A worker command whose connection
    reads as `sync` (an env file's default beside a worker) cannot be serving it: whichever
    real connection the deployment gives it, when they all hold jobs for the same retry_after,
    that is the lease it runs against."""
    connection = p.config.connections.get(r.connection)
    deployed = r.source.path and not r.name.startswith("Horizon ")
    return _real_lease(p, connection) if deployed else connection


def _real_lease(
    p: Project, connection: Connection | None, all_runners: Sequence[Runner] = ()
) -> Connection | None:
    """For a connection that reads as `sync`: the one real connection the project's workers
    serve (a Horizon supervisor on redis); else the real connections' retry_after, when they
    all agree on one (whichever the deployment picks, that is the lease)."""
    if connection is None or connection.driver != "sync":
        return connection
    why = f"the default '{connection.name}' is no queue"
    served = {r.connection for r in all_runners} & {
        n for n, c in p.config.connections.items() if c.driver != "sync" and c.retry_after
    }
    if len(served) == 1:
        name = served.pop()
        return replace(p.config.connections[name], name=f"{name}' ({why}; the workers serve it)")
    return _shared_lease(p, why) or connection


def _shared_lease(p: Project, why: str) -> Connection | None:
    """The project's real connections, when they all hold jobs for the same retry_after."""
    # The project's own connections: those merged in from the framework's config (a
    # beanstalkd the project never wrote) are not candidates.
    real = [c for c in p.config.connections.values()
            if c.retry_after is not None and c.retry_after.amount is not None
            and c.retry_after.source.path is not None]  # fmt: skip
    if len({c.retry_after.amount for c in real if c.retry_after}) != 1:
        return None
    names = "/".join(c.name for c in real)
    return replace(real[0], name=f"{names}' ({why}")


def _tries(p: Project, all_runners: list[Runner]) -> list[Finding]:
    out: list[Finding] = []
    for job in p.jobs:
        tries = job.props.get("tries")
        unlimited = tries is not None and tries.known and as_number(tries.value) == 0
        inherited = tries is None and any(
            r.tries is not None and as_number(r.tries.value) == 0
            for r in all_runners
            if serves(r, p, job)
        )
        if unlimited and not has_deadline(job):
            assert tries is not None
            out.append(
                finding(
                    "laravel-tries-unlimited-no-deadline",
                    f"job {job.name} sets tries = 0 (unlimited) and has no retryUntil(): a job "
                    "that keeps failing is attempted forever.",
                    "add retryUntil() returning a deadline, or set a finite $tries",
                    tries.source,
                    job=job.name,
                )
            )
        max_exc = job.props.get("maxExceptions")
        if (
            max_exc is not None
            and (unlimited or inherited)
            and "CountCrashesAsExceptions" not in (job.middleware_text)
        ):
            out.append(
                finding(
                    "laravel-max-exceptions-crashes",
                    f"job {job.name} relies on maxExceptions with unlimited tries, but a crash "
                    "(OOM, deploy kill, timeout) is no exception: a job that crashes is retried "
                    + ("until retryUntil() passes." if has_deadline(job) else "forever."),
                    "add the CountCrashesAsExceptions middleware (Laravel 13.34+) or a finite "
                    "$tries",
                    max_exc.source,
                    job=job.name,
                )
            )
    for r in all_runners:
        if r.tries is None or as_number(r.tries.value) != 0:
            continue
        open_ended = [
            j.name
            for j in p.jobs
            if serves(r, p, j) and "tries" not in j.props and not has_deadline(j)
        ]
        if open_ended or not p.jobs:
            names = ", ".join(open_ended[:3]) + (" ..." if len(open_ended) > 3 else "")
            out.append(
                finding(
                    "laravel-tries-unlimited-no-deadline",
                    f"worker {r.name} runs with tries = 0 (unlimited), and "
                    + (
                        f"{names} set no $tries or retryUntil()"
                        if open_ended
                        else "no job class was found to bound it"
                    )
                    + ": a failing job loops forever.",
                    "give the worker a finite --tries (e.g. 3) or give each job retryUntil()",
                    r.tries.source,
                )
            )
    return out


def _grace(p: Project, all_runners: list[Runner]) -> list[Finding]:
    out: list[Finding] = []
    horizon = [r for r in all_runners if r.name.startswith("Horizon ")]
    for w in p.workers:
        grace = w.platform_grace
        if grace is None or grace.amount is None:
            continue
        longest: Value | None = None
        names: dict[int, str] = {}
        if w.command == "horizon":
            candidates = [r.timeout for r in horizon if r.timeout_known] or [
                Value("Horizon timeout", 60.0, "s", Source(note="Horizon default"))
            ]
        else:
            mine = next((r for r in all_runners if r.source == w.source), None)
            if mine is None:
                continue
            # queue:work's default 60 s is a bound nobody chose, not a duration: with nothing
            # set, a 10 s grace below it is how every default install looks (noise).
            served = [
                (t, j.name) for j in p.jobs if serves(mine, p, j)
                for t in [own_timeout(j)] if t is not None
            ]  # fmt: skip
            names = {id(t): name for t, name in served}  # the message names the longest job
            candidates = [t for t in [mine.timeout] if not t.source.is_default]
            candidates += [t for t, _ in served]
        for value in candidates:
            if (
                longest is None
                or value.amount is None
                or (longest.amount is not None and value.amount > longest.amount)
            ):
                longest = value
            if longest.amount is None:
                break
        if longest is None or (longest.amount is not None and longest.amount < grace.amount):
            continue
        runs = (
            "jobs with no timeout"
            if longest.amount is None
            else f"jobs of up to {longest.amount:g} s"
        ) + (f" (job {names[id(longest)]})" if id(longest) in names else "")
        out.append(
            finding(
                "laravel-grace-below-job-timeout",
                f"{w.platform} {w.name} runs {runs}, but the platform kills the worker "
                f"{grace.amount:g} s after SIGTERM: a job running at deploy time is killed mid-run "
                "and started again after retry_after.",
                f"raise the platform grace above {longest.amount or 0:g} s (+ margin), or shorten "
                "the timeout",
                w.stop_site(),
                clocks=(longest, grace),
            )
        )
    return out


def _sync(p: Project) -> list[Finding]:
    out: list[Finding] = []
    stale: list[tuple[str, EnvEntry]] = []  # sync written under a key the config does not read
    key = p.config.default_key
    for name, entries in p.env.files.items():
        app_env = entries["APP_ENV"].value if "APP_ENV" in entries else "production"
        # The key config/queue.php reads; an old name beside it (QUEUE_DRIVER=sync where the
        # config reads QUEUE_CONNECTION) is read by nothing, and the default applies instead.
        keys = [k for k in ((key,) if key else QUEUE_KEYS) if k in entries]
        if is_local(app_env) or is_development_name(name):
            continue
        if not keys:
            unread = [e for k in QUEUE_KEYS if k in entries for e in [entries[k]]]
            stale += [(name, e) for e in unread if e.value.lower() == "sync"]
            continue
        entry = entries[keys[0]]
        # A Compose env_file is read both as itself and as the service's environment.
        if entry.value.lower() == "sync" and entry.source not in {f.location for f in out}:
            out.append(
                finding(
                    "laravel-queue-sync",
                    f"{name} sets {keys[0]}=sync with APP_ENV={app_env}: every job runs inside the "
                    "web request that dispatches it, without retries or timeouts.",
                    f"set {keys[0]}=redis (or database, sqs) and run a worker",
                    entry.source,
                )
            )
    if not out:  # an env file writing sync already says it
        out += _sync_by_default(p, stale)
    default = p.config.default
    if key is None and default.known and default.value == "sync" and default.source.path:
        out.append(
            finding(
                "laravel-queue-sync",
                "config/queue.php hard-codes the sync connection as the default in every "
                "environment: jobs run inside the web request.",
                "read it from the environment: 'default' => env('QUEUE_CONNECTION', 'database')",
                default.source,
            )
        )
    return out


def _sync_by_default(p: Project, stale: list[tuple[str, EnvEntry]]) -> list[Finding]:
    """`'default' => env('QUEUE_CONNECTION', 'sync')` that no env source sets (deployment
    environments first, then .env files, as Laravel ranks them): the default is what runs. Said
    only with jobs to run and a production to run them in: a deployed worker, or an env source
    that names a non-local APP_ENV; an example file without APP_ENV is no such evidence. A
    production env file writing sync under the old key (`stale`, QUEUE_DRIVER where the config
    reads QUEUE_CONNECTION) shows a queue is meant to be used: the default is the finding."""
    key, default = p.config.default_key, p.config.default
    if key is None or not (p.jobs or stale) or not default.known or default.value != "sync":
        return []
    if not default.source.note.startswith(f"env('{key}') default") or p.env.get(key) is not None:
        return []
    named = {name: app_env for name, entries in p.env.files.items()
             if not is_development_name(name)
             for app_env in [_app_env(name, entries)] if app_env is not None}  # fmt: skip
    production = [name for name, app_env in named.items() if not is_local(app_env)]
    workers = [w for w in p.workers if not is_development_name(w.source.path or "")]
    # Every APP_ENV written says local: a development setup, where sync is the usual choice.
    if not production and (not workers or named):
        return []
    evidence = (
        f"{stale[0][0]} writes {stale[0][1].source.note}, a name config/queue.php does not read"
        if stale
        else f"{workers[0].platform} {workers[0].name} runs {workers[0].command}"
        if workers
        else f"{production[0]} sets APP_ENV={named[production[0]]}"
        if "APP_ENV" in p.env.files[production[0]]
        else f"{production[0]} runs as APP_ENV=production (it sets none)"
    )
    return [
        finding(
            "laravel-queue-sync",
            f"no environment source sets {key} (read: {p.env.searched()}), so config/queue.php's "
            f"default applies: the sync connection, while {evidence}. Every job runs inside the "
            "web request that dispatches it, without retries or timeouts, and a worker has "
            "nothing to take.",
            f"set {key}=redis (or database, sqs) where the application's environment is set, or "
            f"make the default a real queue: env('{key}', 'database')",
            default.source,
        )
    ]


def _app_env(name: str, entries: dict[str, EnvEntry]) -> str | None:
    """The APP_ENV an env source runs as: the one it writes; for a deployed env file that
    writes none (`.env.docker.production`), config/app.php's default, production. An example
    or template without APP_ENV says nothing about where it runs."""
    if "APP_ENV" in entries:
        return entries["APP_ENV"].value
    base = os.path.basename(name.split(" (")[0]).lower()
    if not base.startswith(".env") or is_template(base):
        return None
    return "production"


def _horizon_below_jobs(p: Project, all_runners: list[Runner]) -> list[Finding]:
    """A job's own $timeout replaces queue:work's --timeout, but not a Horizon supervisor's:
    Horizon kills its workers at the supervisor's timeout on scale-down and terminate. One
    finding per supervisor, on its timeout (or its key when it sets none), naming the longest
    job: the supervisor's timeout is what to change (CONVENTION.md)."""
    out: list[Finding] = []
    for r in all_runners:
        if not r.name.startswith("Horizon ") or r.timeout.amount is None:
            continue
        longer = [
            (own, job.name)
            for job in p.jobs
            for own in [own_timeout(job)]
            if serves(r, p, job)
            and own is not None
            and (own.amount is None or own.amount > r.timeout.amount)
        ]
        if not longer:
            continue
        own, name = max(longer, key=lambda o: float("inf") if o[0].amount is None else o[0].amount)
        runs = "has no timeout" if own.amount is None else f"may run {own.amount:g} s"
        more = f" ({len(longer) - 1} more job(s) run past it too)" if len(longer) > 1 else ""
        at = r.timeout.source if r.timeout.source.path == r.source.path else r.source
        out.append(finding(
            "laravel-horizon-timeout-below-job",
            f"job {name} {runs}, but {r.name} kills its workers after {r.timeout.amount:g} s "
            f"when Horizon scales down or terminates: the job is killed mid-run at every deploy "
            f"that finds it running{more}.",
            f"raise the supervisor's timeout above {own.amount or 0:g} s (and retry_after above "
            "that), or run long jobs on a supervisor of their own",
            at, clocks=(own, r.timeout), job=name))  # fmt: skip
    return out


def _sqs(p: Project, all_runners: list[Runner]) -> list[Finding]:
    used = {r.connection for r in all_runners} | {job_connection(p, j) for j in p.jobs}
    out = []
    for name in sorted(used):
        connection = p.config.connections.get(name)
        if connection is None or connection.driver != "sqs":
            continue
        timeouts = [r.timeout for r in all_runners if r.connection == name and r.timeout_known] + [
            t for j in p.jobs if job_connection(p, j) == name for t in [own_timeout(j)] if t
        ]
        longest = max((t.amount or float("inf") for t in timeouts), default=60.0)
        out.append(
            finding(
                "laravel-sqs-visibility-timeout",
                f"connection '{name}' is SQS: it has no retry_after; the lease is the queue's "
                "Default Visibility Timeout, set in AWS (console, CloudFormation or Terraform), "
                f"which must exceed the longest timeout here ({longest:g} s).",
                f"check the SQS queue's VisibilityTimeout is above {longest:g} s (+ margin)",
                connection.source,
            )
        )
    return out

"""The four clocks checked together: job timeouts against each worker's lease and grace, and
each worker's grace, signal and memory against the platform that runs it.

Order, inner to outer: client call < job timeout (+ kill_after) < worker grace < platform grace.
The lease is renewed by heartbeats, so it need not exceed the job timeout; it only has to
survive a missed heartbeat or two.
"""

from __future__ import annotations

from tenure.doctor.model import Finding, JobModel, Launch, Setting, Source, Value
from tenure.doctor.readers.worker_command import ANY_QUEUE, DEFAULT_GRACE_S, DEFAULT_LEASE_S
from tenure.doctor.rules import finding

# After --grace the worker still writes 'interrupted' for each job and exits: leave it this.
HANDBACK_S = 2.0
MIN_LEASE_S = 10.0
GRACEFUL_SIGNALS = {"SIGTERM", "SIGINT"}
# How each platform spells the setting a fix must change.
PLATFORM_SETTING = {
    "compose": "stop_grace_period: {n}s",
    "kubernetes": "terminationGracePeriodSeconds: {n}",
    "systemd": "TimeoutStopSec={n}",
    "supervisord": "stopwaitsecs={n}",
}


def assumed_launch() -> Launch:
    """The worker as `tenure worker` starts it with no options, when no file says otherwise."""
    at = Source(note="tenure worker default; no deployment file found")
    return Launch(
        platform="assumed",
        name="tenure worker",
        source=at,
        queues=(ANY_QUEUE,),
        concurrency=1,
        lease=Value("worker --lease", DEFAULT_LEASE_S, "s", at),
        grace=Value("worker --grace", DEFAULT_GRACE_S, "s", at),
        memory_mb=None,
        platform_grace=None,
    )


def serves(launch: Launch, queue: str) -> bool:
    return ANY_QUEUE in launch.queues or queue in launch.queues


def check_clocks(launches: list[Launch], jobs: list[JobModel], where: Source) -> list[Finding]:
    out: list[Finding] = []
    if not launches:
        out.append(finding(
            "no-worker-deployed",
            "no `tenure worker` command was found in Compose, Kubernetes, systemd, supervisord "
            "or Procfile files under PATH; worker clocks were checked against its defaults.",
            "point doctor at the directory holding your deployment files (tenure doctor PATH)",
            where))  # fmt: skip
        launches = [assumed_launch()]
    by_queue: dict[str, list[JobModel]] = {}
    for job in jobs:
        by_queue.setdefault(job.queue, []).append(job)
    for launch in launches:
        served = jobs if ANY_QUEUE in launch.queues else [
            job for queue in dict.fromkeys(launch.queues) for job in by_queue.get(queue, [])
        ]  # fmt: skip
        out += check_launch(launch, served)
    deployed = [launch for launch in launches if launch.platform != "assumed"]
    read_queues = {q for launch in deployed for q in launch.queues}
    for job in jobs:
        if deployed and ANY_QUEUE not in read_queues and job.queue not in read_queues:
            read = ", ".join(sorted(read_queues))
            out.append(finding(
                "queue-not-served",
                f"job '{job.name}' goes to queue '{job.queue}', which no deployed worker "
                f"reads (workers read: {read}): its jobs will wait forever.",
                f"add {job.queue} to a worker's --queues (e.g. --queues "
                f"{','.join(sorted(read_queues))},{job.queue})",
                job.source, job=job.name))  # fmt: skip
    return out


def check_launch(launch: Launch, jobs: list[JobModel]) -> list[Finding]:
    out: list[Finding] = []
    who = f"worker '{launch.name}' ({launch.platform})"
    grace, platform = launch.grace, launch.platform_grace
    amount = grace.amount or 0.0
    if (
        platform is not None
        and platform.amount is not None
        and (amount + HANDBACK_S > platform.amount)
    ):
        spelled = PLATFORM_SETTING.get(launch.platform, "")
        needed = int(amount + HANDBACK_S + 0.999)
        raise_it = f", or set {spelled.format(n=needed)}" if spelled else ""
        out.append(finding(
            "grace-not-below-platform",
            f"{who} gives running jobs {amount:g} s on SIGTERM, but the platform sends "
            f"SIGKILL {platform.amount:g} s after SIGTERM: jobs still running are killed "
            f"instead of handed back, and wait a whole lease ({launch.lease.amount:g} s) "
            "as crashes before they run again.",
            f"set --grace {max(platform.amount - HANDBACK_S, 0):g} on the worker{raise_it}",
            launch.stop_site(platform), clocks=(grace, platform)))  # fmt: skip
    signal = launch.stop_signal
    if signal is not None and signal.value not in GRACEFUL_SIGNALS:
        out.append(finding(
            "stop-signal-not-graceful",
            f"{who} is stopped with {signal.value}, which tenure does not treat as a shutdown "
            "request: running jobs die with the worker instead of finishing or being handed back.",
            "stop it with SIGTERM (remove the stop signal setting)",
            launch.stop_site(signal), clocks=(signal,)))  # fmt: skip
    out += _lease(launch, who, jobs)
    out += _memory(launch, who)
    orphans = launch.orphans_children
    if orphans is not None:
        fix = (
            "set killasgroup=true (or stopasgroup=true) for this program"
            if launch.platform == "supervisord"
            else "use KillMode=control-group (the default)"
        )
        out.append(finding(
            "children-survive-kill",
            f"{who}: when the platform's SIGKILL comes ({orphans.label} {orphans.value}), it "
            "reaches the worker but not its job processes, which keep running as orphans while "
            "the lease expires and another worker starts the same jobs.",
            fix, launch.stop_site(orphans),
            clocks=(orphans,)))  # fmt: skip
    out += _outlived_grace(launch, who, jobs)
    return out


def _outlived_grace(launch: Launch, who: str, jobs: list[JobModel]) -> list[Finding]:
    """A job that really runs longer than the grace (its measured p95) is a warning; one that
    merely may (its timeout, with nothing measured) is one summary line for the whole worker:
    with the defaults (timeout 60 s, grace 8 s) that is every job, and a warning per job would
    teach people to ignore the doctor."""
    grace, platform = launch.grace, launch.platform_grace
    amount = grace.amount or 0.0
    out: list[Finding] = []
    unmeasured: list[tuple[JobModel, float]] = []
    for job in jobs:
        if job.measured is not None and job.measured.amount is not None:
            if job.measured.amount > amount:
                out.append(_measured_outlives(launch, who, job, job.measured))
        elif job.timeout is not None and job.timeout.amount is not None:
            longest = job.timeout.amount + (job.kill_after.amount or 0.0)
            if longest > amount:
                unmeasured.append((job, longest))
    if unmeasured:
        names = ", ".join(f"'{job.name}' ({longest:g} s)" for job, longest in unmeasured[:5])
        more = f" and {len(unmeasured) - 5} more" if len(unmeasured) > 5 else ""
        first = unmeasured[0][0]
        out.append(finding(
            "timeouts-exceed-grace",
            f"{len(unmeasured)} job(s) may run longer than the {amount:g} s {who} gives running "
            f"jobs on a deploy, judged by timeout + kill_after only (no history of how long "
            f"they really run): {names}{more}.",
            "run the doctor against the store once the jobs have run (history decides), or "
            "keep jobs shorter than --grace",
            launch.stop_site(platform) if launch.source.path else first.source,
            clocks=(grace,) + ((platform,) if platform else ())))  # fmt: skip
    return out


def _measured_outlives(launch: Launch, who: str, job: JobModel, measured: Value) -> Finding:
    grace, platform = launch.grace, launch.platform_grace
    amount = grace.amount or 0.0
    slow = measured.amount or 0.0
    return finding(
        "job-outlives-grace",
        f"job '{job.name}' runs {slow:g} s in its slowest 5% of attempts but {who} gives "
        f"running jobs {amount:g} s on a deploy: such a run is interrupted and starts again "
        "from the beginning.",
        f"split the work into a batch of short jobs (app.batch_over_ids), or raise --grace "
        f"above {slow:g} s and the platform's grace above that",
        job.source, clocks=(measured, grace) + ((platform,) if platform else ()),
        job=job.name)  # fmt: skip


def _lease(launch: Launch, who: str, jobs: list[JobModel]) -> list[Finding]:
    lease = launch.lease
    if lease.amount is None or lease.amount >= MIN_LEASE_S:
        return []
    beat = lease.amount / 3
    outlived = [j for j in jobs if j.timeout and (j.timeout.amount or 0) > lease.amount]
    longest = max(outlived, key=lambda j: j.timeout.amount or 0 if j.timeout else 0, default=None)
    message = (
        f"{who} runs with --lease {lease.amount:g} s, renewed every {beat:.3g} s: a store "
        f"hiccup or process pause of a few seconds makes it stop a healthy job, which another "
        "worker then starts again."
    )
    clocks: tuple[Value | Setting, ...] = (lease,)
    if longest is not None and longest.timeout is not None:
        renewals = int((longest.timeout.amount or 0) / beat)
        message += (
            f" Job '{longest.name}' (timeout {longest.timeout.amount:g} s) needs {renewals} "
            "renewals in a row to succeed."
        )
        clocks += (longest.timeout,)
    return [finding(
        "lease-too-short", message,
        f"remove --lease (default {DEFAULT_LEASE_S:g} s); short leases are for tests",
        lease.source if lease.source.path else launch.source, clocks=clocks,
        severity="error" if longest is not None else "warning")]  # fmt: skip


def _memory(launch: Launch, who: str) -> list[Finding]:
    limit = launch.memory_limit
    if limit is None or limit.amount is None:
        return []
    if launch.memory_mb is None:
        per_child = int(limit.amount * 0.8 / launch.concurrency)
        return [finding(
            "worker-memory-unset",
            f"{who} runs under a {limit.amount:g} MB memory limit without --memory: a job that "
            "grows gets the whole worker OOM-killed, crashing every job it runs.",
            f"add --memory {per_child} (MB per child, so {launch.concurrency} child(ren) stay "
            "under 80% of the limit)",
            launch.stop_site(limit), clocks=(limit,))]  # fmt: skip
    budget = (launch.memory_mb.amount or 0) * launch.concurrency
    if budget >= limit.amount:
        per_child = int(limit.amount * 0.8 / launch.concurrency)
        return [finding(
            "memory-limit-below-worker",
            f"{who} lets {launch.concurrency} children grow to {launch.memory_mb.amount:g} MB "
            f"each ({budget:g} MB) under a {limit.amount:g} MB limit: the kernel OOM-kills the "
            "worker before tenure's own check can replace a child.",
            f"set --memory {per_child} (or raise the platform's memory limit above "
            f"{budget * 1.25:g} MB)",
            launch.stop_site(limit), clocks=(launch.memory_mb, limit))]  # fmt: skip
    return []

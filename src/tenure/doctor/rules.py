"""Every rule the doctor applies: id, severity, and why it exists (the rule index).

`render_rules_markdown()` writes docs/rules.md from this table, so the page and the checks
cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenure.doctor.budget.index import BUDGET_RULES, STANDARD
from tenure.doctor.celery.index import CELERY_RULES
from tenure.doctor.laravel.index import LARAVEL_RULES
from tenure.doctor.model import Finding, Setting, Severity, Source, Value


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    group: str  # deployment | code | history | app | budget | laravel | celery
    title: str
    why: str  # one sentence: what goes wrong
    cite: str = ""  # the framework documentation a foreign rule enforces


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        # -- the clocks across deployment files ----------------------------------------------
        Rule("grace-not-below-platform", "error", "deployment",
             "The worker's --grace must end before the platform's SIGKILL",
             "When the platform kills the worker before its --grace ends, running jobs are not "
             "handed back: they crash, wait a whole lease, and count as a failed try."),
        Rule("stop-signal-not-graceful", "error", "deployment",
             "The platform must stop the worker with SIGTERM or SIGINT",
             "tenure shuts down gracefully on SIGTERM and SIGINT only; any other stop signal "
             "kills the worker with its jobs mid-run."),
        Rule("job-outlives-grace", "warning", "deployment",
             "A job runs longer than the worker's --grace (measured in the store's history)",
             "A deploy gives running jobs --grace seconds; a longer run is interrupted and starts "
             "again from the beginning on another worker, so its side effects can happen twice."),
        Rule("timeouts-exceed-grace", "info", "deployment",
             "Jobs' timeouts exceed the worker's --grace, and no history says how long they run",
             "A timeout is an upper bound, not a duration: most jobs end long before it, so the "
             "doctor says this once per worker and warns per job only from measured runs."),
        Rule("lease-too-short", "warning", "deployment",
             "The lease is too short for its heartbeat to survive a hiccup",
             "The worker renews its lease every lease/3 and stops a job it could not renew for "
             "most of a lease: a short lease turns a one-second store or GC pause into a killed, "
             "re-run job."),
        Rule("memory-limit-below-worker", "error", "deployment",
             "The platform's memory limit must be above the worker's --memory budget",
             "The kernel OOM-kills the container before tenure's own --memory check replaces a "
             "child: every running job crashes instead of one child being recycled."),
        Rule("worker-memory-unset", "warning", "deployment",
             "A memory-limited worker should set --memory",
             "Without --memory a leaking job grows until the kernel OOM-kills the whole worker, "
             "crashing every job it runs, instead of tenure replacing the one child."),
        Rule("children-survive-kill", "warning", "deployment",
             "The platform's final SIGKILL must reach the job processes too",
             "When only the worker is SIGKILLed, its job child processes keep running as orphans "
             "while the lease expires and another worker starts the same job: it runs twice."),
        Rule("queue-not-served", "error", "deployment",
             "Every job's queue needs a worker",
             "A job dispatched to a queue that no deployed worker reads waits forever, silently."),
        Rule("no-worker-deployed", "info", "deployment",
             "No `tenure worker` found in the deployment files",
             "Without a running worker nothing is executed; the doctor also cannot check the "
             "worker's clocks against the platform's."),
        # -- job code --------------------------------------------------------------------------
        Rule("client-timeout-missing", "error", "code",
             "Network calls in jobs need an explicit timeout",
             "A call with no timeout can wait forever: the job burns its whole timeout on every "
             "try and fails as 'timed out' instead of with the network error."),
        Rule("client-timeout-not-below-job", "error", "code",
             "A network call's timeout must be below the job's timeout",
             "When the call may outlive the job, the job is killed mid-call and the request may "
             "still complete on the other side: the retry sends it a second time."),
        Rule("sleep-loop", "warning", "code",
             "Jobs should not poll with time.sleep in a loop",
             "A sleeping job holds a worker slot and runs toward its timeout while doing "
             "nothing; a delayed follow-up job frees the slot and survives deploys."),
        Rule("async-blocking-call", "warning", "code",
             "Async jobs must not make blocking calls",
             "A blocking call (time.sleep, requests, subprocess.run) stops the event loop: the "
             "job's timeout cannot interrupt it, since asyncio cancels only at an await, and "
             "every other coroutine on the loop stalls with it."),
        Rule("tries-unlimited-no-deadline", "error", "code",
             "tries=None needs retry_until",
             "A job with unlimited tries and no deadline that always fails retries forever, "
             "and paid API calls with it."),
        Rule("unique-without-expiry", "warning", "code",
             "unique= needs unique_for=",
             "A uniqueness lock with no expiry blocks every later dispatch with that key for "
             "good if its job never finishes (cancelled, forgotten, stuck)."),
        Rule("payload-bytes", "error", "code",
             "Job arguments must be JSON: no bytes",
             "Payloads are JSON; bytes cannot be encoded, so the dispatch raises PayloadError."),
        Rule("payload-blob", "warning", "code",
             "Pass a reference, not file contents, as a job argument",
             "Payloads are size-limited and stored with every job; large contents fail at "
             "dispatch once they grow. Store the data elsewhere and pass its id or path."),
        Rule("dispatch-inside-batch", "warning", "code",
             "Only a batch's coordinator may add jobs",
             "Jobs dispatched from inside a batch member are not part of the batch: the batch "
             "reports done while they still run, and its progress lies."),
        Rule("job-not-registered", "warning", "app",
             "Every job must be registered when the worker loads --app",
             "A job whose module --app does not import is unknown to the worker: its dispatched "
             "jobs fail with 'no job named ...'."),
        Rule("periodic-runs-pile-up", "warning", "app",
             "A periodic job's runs must not outlast its interval without an overlap key",
             "A run that is still going when its schedule comes due again overlaps the next "
             "one; every slow run adds a worker slot held, until the queue backs up."),
        Rule("app-invalid", "error", "app",
             "The app must load without configuration errors",
             "The worker refuses to start with this app; no job runs until it is fixed."),
        # -- the store's history ---------------------------------------------------------------
        Rule("near-timeout", "warning", "history",
             "Jobs should finish well inside their timeout",
             "A job whose slow runs reach 80% of its timeout will soon time out on bigger "
             "inputs and be retried from the start."),
        Rule("over-budget", "warning", "history",
             "Jobs should finish within the 5-second budget",
             "Long jobs are interrupted by deploys and retried whole; a batch of small jobs "
             "makes progress that survives and shows it."),
        Rule("crash-loop", "error", "history",
             "A job keeps crashing",
             "Crashes (OOM, kill -9, lost host) raise no exception; a job that crashes every "
             "attempt loops until its tries run out, repeating its side effects."),
        Rule("queue-without-worker", "error", "history",
             "Queues with waiting jobs need a live worker",
             "Jobs are waiting in a queue that no live worker reads: nothing will run them."),
        Rule("queue-stalled", "error", "history",
             "A queue's oldest ready job must not wait longer than its jobs' timeouts",
             "The oldest ready job of a queue that no live worker reads has waited longer than "
             "its jobs take to time out: the queue is stalled, and nothing will run it."),
        Rule("unknown-job-waiting", "warning", "history",
             "Waiting jobs should be known to a live worker of their queue",
             "During a rolling deploy new code dispatches jobs old workers do not define: they "
             "are handed back until a worker that knows them runs them, and fail after the "
             "workers' --unknown-grace if none does."),
        Rule("unknown-job-failed", "error", "history",
             "Jobs should not fail because no worker knows their name",
             "A job no worker that knows it ran within --unknown-grace fails: the code that "
             "defines it was never deployed, or the deploy took longer than the grace."),
        Rule("attempts-overlap", "error", "history",
             "Two attempts of one job must never overlap in time (a tenure bug)",
             "Overlapping attempts mean the job ran twice at once, which tenure's leases and "
             "fencing exist to prevent; report it with the job id."),
    )
}  # fmt: skip
for _group, _rules in (("laravel", LARAVEL_RULES), ("celery", CELERY_RULES)):
    RULES.update({r[0]: Rule(r[0], r[1], _group, r[2], r[3], r[4]) for r in _rules})
RULES.update({r[0]: Rule(r[0], r[1], "budget", r[2], r[3], STANDARD) for r in BUDGET_RULES})


def finding(
    rule: str,
    message: str,
    fix: str,
    location: Source,
    *,
    clocks: tuple[Value | Setting, ...] = (),
    job: str | None = None,
    severity: Severity | None = None,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity or RULES[rule].severity,
        message=message,
        fix=fix,
        location=location,
        clocks=clocks,
        job=job,
    )


def render_rules_markdown() -> str:
    lines = [
        "# tenure doctor rules",
        "",
        "Every rule `tenure doctor` applies, with its default severity and why it exists.",
        "`error` findings make doctor exit 1; `warning` findings do too with `--strict`.",
        "",
    ]
    titles = {"deployment": "Deployment clocks", "code": "Job code", "app": "The app",
              "history": "The store's history",
              "budget": "The time-budget standard (Python and Laravel code)",
              "laravel": "Laravel projects (--laravel)",
              "celery": "Celery apps (--celery)"}  # fmt: skip
    for group, title in titles.items():
        lines += [f"## {title}", ""]
        for rule in (r for r in RULES.values() if r.group == group):
            lines += [f"### `{rule.id}` ({rule.severity})", "", f"**{rule.title}.** {rule.why}", ""]
            lines += [f"Enforces: {rule.cite}", ""] if rule.cite else []
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_rules_markdown(), end="")


def once_per_unit(findings: list[Finding]) -> list[Finding]:
    """One finding per rule and unit: two workers the same unit starts (the two arms of an
    `if` in its script, several programs of one supervisord) are one thing to change."""
    seen: set[tuple[str, str | None, int | None]] = set()
    out = []
    for f in findings:
        key = (f.rule, f.location.path, f.location.line)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out

"""The Celery rules: (id, severity, title, why, cite). tenure.doctor.rules turns them into Rules."""

from __future__ import annotations

from tenure.doctor.model import Severity

DOCS = "https://docs.celeryq.dev/en/stable"
CELERY_RULES: tuple[tuple[str, Severity, str, str, str], ...] = (
    (
        "celery-visibility-below-time-limit",
        "error",
        "With acks_late, task_time_limit must be below the broker's visibility_timeout",
        "A late-acknowledged task still running when the visibility timeout expires is "
        "redelivered to another worker while the first still runs it.",
        f"{DOCS}/getting-started/backends-and-brokers/redis.html#visibility-timeout: a task not "
        "acknowledged within the visibility timeout is redelivered to another worker.",
    ),
    (
        "celery-eta-beyond-visibility",
        "error",
        "countdown/ETA must stay below the broker's visibility_timeout",
        "An ETA task waits unacknowledged in the worker; past the visibility timeout the broker "
        "redelivers it, and it runs once per redelivery.",
        f"{DOCS}/getting-started/backends-and-brokers/redis.html#caveats: ETA/countdown beyond "
        "the visibility timeout causes the task to be redelivered and executed again.",
    ),
    (
        "celery-reject-on-worker-lost-loop",
        "warning",
        "acks_late with task_reject_on_worker_lost requeues crashing tasks forever",
        "A task that kills its worker (OOM, segfault) is put back and taken again, without a "
        "retry count, crashing a worker each time.",
        f"{DOCS}/userguide/configuration.html#task-reject-on-worker-lost: enabling this can "
        "cause message loops; make sure you know what you are doing.",
    ),
    (
        "celery-prefetch-outlives-visibility",
        "warning",
        "Prefetched messages can outlive the visibility timeout",
        "With acks_late each worker process reserves worker_prefetch_multiplier messages; ones "
        "waiting behind long tasks pass the visibility timeout and are delivered twice.",
        f"{DOCS}/userguide/optimizing.html#prefetch-limits: with long tasks and acks_late, set "
        "worker_prefetch_multiplier = 1 (default 4).",
    ),
    (
        "celery-pickle-enabled",
        "error",
        "Do not accept pickle",
        "Accepting pickle lets anyone who can write to the broker run code in the worker.",
        f"{DOCS}/userguide/security.html#serializers: pickle should be avoided for untrusted "
        "input; accept_content defaults to json.",
    ),
    (
        "celery-task-unbounded",
        "warning",
        "Tasks need a time limit where a deploy's grace ends in SIGKILL",
        "On SIGTERM a worker waits for its running tasks until the platform's grace ends and "
        "it is killed; a task with no time limit still running then is lost (acknowledged at "
        "start) or repeated from the start (acks_late).",
        f"{DOCS}/userguide/workers.html#time-limits: a single task can potentially run forever; "
        "the time limit (--time-limit / task_time_limit) guards against it.",
    ),
    (
        "celery-grace-below-time-limit",
        "warning",
        "The platform's grace must outlast the longest task time limit",
        "A task allowed to run longer than the grace a deploy gives the worker is killed "
        "mid-run whenever a deploy finds it running.",
        f"{DOCS}/userguide/workers.html#stopping-the-worker: on TERM the worker finishes all "
        "currently executing tasks before it shuts down (warm shutdown).",
    ),
    (
        "celery-memory-per-child-over-limit",
        "error",
        "worker_max_memory_per_child times the concurrency must stay below the memory limit",
        "Celery replaces a child only after a task that left it over max_memory_per_child; when "
        "the children together may pass the container's limit, the kernel OOM-kills the whole "
        "worker first, with every task it runs.",
        f"{DOCS}/userguide/configuration.html#worker-max-memory-per-child: the maximum resident "
        "memory in kilobytes a child may use before it is replaced, checked after a task.",
    ),
)

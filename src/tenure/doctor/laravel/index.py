"""The Laravel rules: (id, severity, title, why, cite). tenure.doctor.rules turns them into Rules.

`cite` is the framework documentation each rule enforces, so a reader can check the rule
against its source instead of trusting tenure.
"""

from __future__ import annotations

from tenure.doctor.model import Severity

DOCS = "https://laravel.com/docs/13.x"
LARAVEL_RULES: tuple[tuple[str, Severity, str, str, str], ...] = (
    (
        "laravel-timeout-not-below-retry-after",
        "error",
        "A job's or worker's timeout must be below retry_after of its connection",
        "retry_after is a fixed lease: a job still running when it expires is handed to a second "
        "worker while the first still runs it, so its side effects happen twice.",
        f"{DOCS}/queues#job-expirations-and-timeouts: the --timeout value should always be at "
        "least several seconds shorter than your retry_after value; otherwise a job may be "
        "processed twice. The job's own $timeout replaces --timeout.",
    ),
    (
        "laravel-timeout-margin",
        "warning",
        "Leave at least 5 s between a timeout and retry_after",
        "The worker needs time after the timeout to kill the job and release it; with a margin "
        "of a second or two, a slow kill still lets retry_after hand the job out again.",
        f"{DOCS}/queues#job-expirations-and-timeouts: the timeout should be several seconds "
        "shorter than retry_after.",
    ),
    (
        "laravel-timeout-with-once",
        "warning",
        "--timeout has no effect with --once",
        "A worker started with --once does not enforce --timeout, so a stuck job runs until "
        "retry_after hands it to another worker.",
        f"{DOCS}/queues#worker-timeouts (queue:work options): --timeout is not enforced when the "
        "worker processes a single job with --once.",
    ),
    (
        "laravel-tries-unlimited-no-deadline",
        "error",
        "tries = 0 (unlimited) needs retryUntil()",
        "A job that may be attempted forever and always fails repeats its side effects, and "
        "paid API calls, until someone notices.",
        f"{DOCS}/queues#time-based-attempts: with unlimited tries ($tries = 0), define "
        "retryUntil() so the job stops being attempted after a deadline.",
    ),
    (
        "laravel-max-exceptions-crashes",
        "warning",
        "maxExceptions does not count crashes unless crash counting is on",
        "A job killed by OOM, a deploy or its own timeout raises no exception: with unlimited "
        "tries it is retried forever while maxExceptions never trips.",
        f"{DOCS}/queues#max-exceptions: maxExceptions counts unhandled exceptions; workers that "
        "die mid-job are counted only with the CountCrashesAsExceptions middleware (13.34).",
    ),
    (
        "laravel-grace-below-job-timeout",
        "warning",
        "The platform's stop grace must outlast the longest job a worker runs",
        "On SIGTERM a Laravel worker finishes its current job; a platform that sends SIGKILL "
        "sooner kills the job mid-run, and retry_after later starts it again from the top.",
        f"{DOCS}/queues#supervisor-configuration: stopwaitsecs should be greater than the number "
        "of seconds consumed by your longest running job.",
    ),
    (
        "laravel-queue-sync",
        "error",
        "QUEUE_CONNECTION=sync runs jobs inside the request outside local",
        "With the sync driver every dispatched job runs in the web request: slow requests, no "
        "retries, and a failure is the user's error page.",
        f"{DOCS}/queues#driver-prerequisites: the sync driver executes jobs immediately within "
        "the current process and is meant for local development.",
    ),
    (
        "laravel-batch-table-missing",
        "error",
        "Bus::batch needs the job_batches table",
        "Dispatching a batch writes to job_batches first; without the migration every batch "
        "dispatch fails with a database error.",
        f"{DOCS}/queues#job-batching: create a migration for the job_batches table "
        "(php artisan make:queue-batches-table) before dispatching batches.",
    ),
    (
        "laravel-batch-callback-this",
        "error",
        "Batch callbacks must not use $this",
        "Batch callbacks are serialized and run later by a worker; a closure that uses $this "
        "drags the whole object into the payload or fails to serialize.",
        f"{DOCS}/queues#dispatching-batches: since batch callbacks are serialized and executed "
        "at a later time, you should not use the $this variable within the callbacks.",
    ),
    (
        "laravel-client-timeout-missing",
        "error",
        "HTTP calls in jobs need a timeout",
        "Raw Guzzle and curl wait forever by default: the job burns its whole timeout on "
        "every try, and the request may still land on the other side.",
        f"{DOCS}/http-client#timeout: set a timeout; Guzzle and curl have none by default (the "
        "Http facade defaults to 30 s, PHP streams to default_socket_timeout, 60 s).",
    ),
    (
        "laravel-client-timeout-not-below-job",
        "error",
        "An HTTP call's timeout must be below the job's timeout",
        "When the call may outlive the job, the job is killed mid-call and the retry sends the "
        "request a second time.",
        f"{DOCS}/http-client#timeout: the Http facade times out after 30 seconds unless "
        "->timeout() says otherwise; file_get_contents, fopen and PHP's other stream "
        "functions after default_socket_timeout (60 s).",
    ),
    (
        "laravel-unique-lock-store",
        "warning",
        "ShouldBeUnique needs a cache store shared by every worker host",
        "Unique locks live in the default cache store: `array` keeps them per process and `file` "
        "per host, so two workers each take the 'unique' lock and the job runs twice.",
        f"{DOCS}/queues#unique-jobs: unique jobs require a cache driver that supports atomic "
        "locks and is shared by every server processing jobs.",
    ),
    (
        "laravel-sqs-visibility-timeout",
        "info",
        "On SQS the lease is the queue's visibility timeout, in AWS",
        "SQS has no retry_after: a job running past the queue's Default Visibility Timeout is "
        "delivered again; the doctor cannot read that value from the project.",
        f"{DOCS}/queues#job-expiration: the only connection without retry_after is SQS, which "
        "retries based on the Default Visibility Timeout managed in the AWS console.",
    ),
    (
        "laravel-no-worker-found",
        "info",
        "No queue:work or horizon command found in the deployment files",
        "Without the command the doctor checks worker clocks against Laravel's defaults and "
        "cannot compare them with the platform's stop grace.",
        f"{DOCS}/queues#running-the-queue-worker",
    ),
    (
        "laravel-horizon-timeout-below-job",
        "warning",
        "A Horizon supervisor's timeout must not be below the timeout of a job it runs",
        "Horizon force-kills a supervisor's workers at its own timeout when it scales down or "
        "terminates, whatever the job's $timeout says: a longer job is killed mid-run on every "
        "deploy and scale-down, and runs again after retry_after.",
        f"{DOCS}/horizon#timeouts: the supervisor's timeout should be a few seconds shorter "
        "than retry_after; jobs longer than it are killed when Horizon terminates its workers.",
    ),
)

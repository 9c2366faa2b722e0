"""The time-budget rules: (id, severity, title, why, fix). tenure.doctor.rules turns them into
Rules; the ids are a contract (configs and CI name them), never renamed.

`why` is one sentence in the standard's own terms (the 5-second budget, the request that must
answer at once, the batch of small jobs); `fix` is the standard's right shape."""

from __future__ import annotations

from tenure.doctor.model import Severity

STANDARD = "Queues and Time Budget"
BUDGET_RULES: tuple[tuple[str, Severity, str, str, str], ...] = (
    (
        "work-in-request",
        "warning",
        "A web entry point must not do work that grows with the data",
        "A request must answer at once: a loop over a query's rows doing per-row work (or a "
        "call with no timeout) grows with the data until it outlives the 5-second budget.",
        "start a batch from the model (or dispatch one job) and answer at once; the batch's "
        "small jobs do the rows",
    ),
    (
        "work-in-command",
        "warning",
        "A console command must not walk rows doing per-row work itself",
        "Commands are units of work too: one that walks every row runs for as long as the data "
        "is big, and a deploy or a crash loses everything it had not finished.",
        "have the command start a batch: a coordinator reads the lowest and highest id once "
        "and adds small jobs over id ranges",
    ),
    (
        "work-in-migration",
        "warning",
        "A migration must select only the ids and dispatch one small job per chunk",
        "A migration that walks rows and works on each (or dispatches Job classes that may not "
        "exist by the time they run) holds the deploy for as long as the table is big.",
        "select only the ids in chunks and dispatch one static closure (Laravel) or one small "
        "job (Python) per chunk",
    ),
    (
        "job-not-batched",
        "warning",
        "A job whose work grows with the data must be a batch of small jobs",
        "A job that walks an unbounded query row by row outgrows the 5-second budget: deploys "
        "interrupt it and a retry starts it again from the first row.",
        "make it a batch: a coordinator reads min/max id once and adds small jobs, each over "
        "the id range it is given (whereBetween / id__range)",
    ),
    (
        # info: 2/3 precise on the standard's corpus (treeherder's task sending one job per
        # repository, a small table, is not flagged by the reviewer); below the 90 % a
        # warning needs (issue 28).
        "coordinator-walks-rows",
        "info",
        "A coordinator reads the lowest and highest id once, never every row",
        "A coordinator that iterates rows or plucks every id grows with the table, so the one "
        "job meant to be instant becomes the batch's slowest.",
        "read min('id') and max('id') once and add one job per id range",
    ),
    (
        "member-dispatches",
        "warning",
        "Only the coordinator adds work; a small job never dispatches",
        "Jobs a batch member dispatches are outside the batch: the batch reports done while "
        "they still run, and a retried member dispatches them twice.",
        "let the coordinator add every job to the batch; the member only does its own range",
    ),
    (
        "job-resumes-from-cursor",
        "warning",
        "A job receives its range when it is added; it never resumes from a stored cursor",
        "A job that reads a last id or offset from storage and writes it back as it goes "
        "skips a range when a retry or a second copy moves the cursor under it.",
        "have the coordinator add one job per id range; each job reads only the range it was given",
    ),
    (
        "request-waits-for-job",
        "warning",
        "A request must not dispatch a job and then block on its result",
        "A request must answer at once: waiting for a job (dispatchSync, .get(), wait()) puts "
        "the job's whole run back inside the request.",
        "dispatch and answer at once; show the result when the job is done (poll, broadcast "
        "or a page that reads its state)",
    ),
    (
        "batch-floods-queue",
        "info",
        "A coordinator adding a very large number of jobs should use its own queue or a delay",
        "Thousands of jobs added at once to a shared queue stand in front of every other "
        "job on it, so small urgent jobs wait behind the batch.",
        "give the batch its own queue (onQueue / queue=) or add its jobs in slices",
    ),
    (
        "progress-total-regresses",
        "warning",
        "Progress is measured against a total recorded once, not the batch's own count",
        "When a coordinator adds slices as it goes, the batch's own total grows with them and "
        "its progress goes backwards on the screen.",
        "record the total once (from the first coordinator's lowest and highest id) and "
        "measure processed rows against it",
    ),
)
FIXES = {rule[0]: rule[4] for rule in BUDGET_RULES}

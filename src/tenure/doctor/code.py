"""Job definitions and job code, read by AST: nothing here imports the user's modules.

The loaded app (when there is one) says which jobs exist and their real settings; the AST says
where each setting is written and what the job's code does.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from tenure.doctor.astutil import (
    FunctionNode,
    Module,
    called_helpers,
    keyword,
    number,
    sleeps_in_loops,
)
from tenure.doctor.asyncblock import check_async_job
from tenure.doctor.clients import find_client_calls, suggest_timeout
from tenure.doctor.model import Finding, JobModel, Skipped, Source, Value
from tenure.doctor.rules import finding
from tenure.doctor.walk import FoundFile

JOB_DEFAULT = Source(note="tenure job default")
# A file that defines, dispatches or batches jobs says so in its text; skipping the rest
# unparsed is what keeps a 5,000-file tree fast.
MARKERS = (b".job", b".dispatch", b".sig(", b"batch")
BYTES_TYPES = {"bytes", "bytearray", "memoryview"}
BYTES_CALLS = {"encode", "read_bytes", "tobytes", "b64encode", "urlsafe_b64encode"}
BLOB_CALLS = {"read", "read_text", "getvalue", "readlines"}
LARGE_LITERAL = 10_000
ADDERS = {"dispatch", "dispatch_many", "batch", "batch_over_ids"}


@dataclass
class AstJob:
    name: str
    function: FunctionNode
    module: Module
    call: ast.Call | None  # the decorator call; None for a bare @app.job
    line: int
    receiver: str | None  # "app" in @app.job(...)

    def kw(self, name: str) -> ast.keyword | None:
        return keyword(self.call, name) if self.call is not None else None


def parse_modules(files: list[FoundFile]) -> tuple[list[Module], list[Skipped]]:
    modules: list[Module] = []
    skipped: list[Skipped] = []
    for found in files:
        if not any(marker in found.data for marker in MARKERS):
            continue
        parsed = parse_one(found.path, found.rel, found.data)
        if isinstance(parsed, Module):
            modules.append(parsed)
        else:
            skipped.append(parsed)
    return modules, skipped


def parse_one(path: str, rel: str, data: bytes) -> Module | Skipped:
    try:
        return Module.parse(path, rel, data)
    except SyntaxError as exc:
        return Skipped(rel, f"Python syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, UnicodeDecodeError) as exc:
        return Skipped(rel, f"cannot parse as Python: {exc}")
    except RecursionError:
        return Skipped(rel, "Python nested too deeply to parse")


JOB_DECORATORS = ("job", "periodic")  # @app.periodic(...) defines a job too


def find_jobs(modules: list[Module]) -> list[AstJob]:
    jobs: list[AstJob] = []
    for module in modules:
        for node in module.nodes():
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if not (isinstance(target, ast.Attribute) and target.attr in JOB_DECORATORS):
                    continue
                call = decorator if isinstance(decorator, ast.Call) else None
                name_kw = keyword(call, "name") if call is not None else None
                name = node.name
                if name_kw is not None and isinstance(name_kw.value, ast.Constant):
                    name = str(name_kw.value.value)
                receiver = target.value.id if isinstance(target.value, ast.Name) else None
                jobs.append(AstJob(name, node, module, call, decorator.lineno, receiver))
    return jobs


def model_from_ast(job: AstJob) -> JobModel:
    """A job as written, for when the app did not load (or does not register it)."""
    timeout = _seconds_kw(job, "timeout", 60.0)
    kill_after = _seconds_kw(job, "kill_after", 5.0)
    tries_kw = job.kw("tries")
    tries: int | None = 3
    if tries_kw is not None:
        resolved = number(tries_kw.value, job.module)
        tries = None if resolved is None or resolved.value is None else int(resolved.value)
    queue_kw = job.kw("queue")
    queue = "default"
    if queue_kw is not None and isinstance(queue_kw.value, ast.Constant):
        queue = str(queue_kw.value.value)
    until = job.kw("retry_until")
    return JobModel(
        name=job.name,
        queue=queue,
        source=Source(job.module.rel, job.line),
        timeout=timeout,
        kill_after=kill_after or Value("job kill_after", 5.0, "s", JOB_DEFAULT),
        tries=tries,
        tries_source=_kw_source(job, "tries"),
        has_retry_until=until is not None and not _is_none(until.value),
        is_async=isinstance(job.function, ast.AsyncFunctionDef),
        keywords=_keywords(job),
        path=job.module.path,
    )


def enrich(model: JobModel, job: AstJob) -> None:
    """Give a runtime job the source lines its settings were written on."""
    model.source = Source(job.module.rel, job.line)
    model.keywords = _keywords(job)
    model.timeout = _relabel(model.timeout, _kw_source(job, "timeout"))
    model.kill_after = _relabel(model.kill_after, _kw_source(job, "kill_after")) or model.kill_after
    model.tries_source = _kw_source(job, "tries")


def _relabel(value: Value | None, source: Source) -> Value | None:
    return None if value is None else Value(value.label, value.amount, value.unit, source)


def _keywords(job: AstJob) -> dict[str, Source]:
    if job.call is None:
        return {}
    return {k.arg: Source(job.module.rel, k.lineno) for k in job.call.keywords if k.arg}


def _kw_source(job: AstJob, name: str) -> Source:
    given = job.kw(name)
    return Source(job.module.rel, given.lineno) if given is not None else JOB_DEFAULT


def _seconds_kw(job: AstJob, name: str, default: float) -> Value | None:
    given = job.kw(name)
    if given is None:
        return Value(f"job {name}", default, "s", JOB_DEFAULT)
    resolved = number(given.value, job.module)
    if resolved is None or resolved.value is None:
        return None
    return Value(f"job {name}", resolved.value, "s", Source(job.module.rel, given.lineno))


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


# -- checks on one job's definition and code ---------------------------------------------------
def check_job(model: JobModel, job: AstJob, batch_members: set[str]) -> list[Finding]:
    out: list[Finding] = []
    model.calls = find_client_calls(job.function, job.module)
    out += _client_findings(model)
    out += _sleep_loops(model, job)
    out += check_async_job(model, job.function, job.module)
    tries = job.kw("tries")
    if tries is not None and _is_none(tries.value) and not model.has_retry_until:
        out.append(finding(
            "tries-unlimited-no-deadline",
            f"job '{model.name}' has tries=None (unlimited) and no retry_until: if it always "
            "fails it retries forever (tenure refuses to load it for this reason).",
            "add retry_until=timedelta(hours=1) (a deadline), or set a number of tries",
            Source(job.module.rel, tries.lineno), job=model.name))  # fmt: skip
    if "unique" in model.keywords and "unique_for" not in model.keywords:
        out.append(finding(
            "unique-without-expiry",
            f"job '{model.name}' sets unique= without unique_for=: if one of its jobs never "
            "finishes, every later dispatch with the same key is dropped, for good.",
            "add unique_for=timedelta(...) set to the longest the lock may rightly be held",
            model.keywords["unique"], job=model.name))  # fmt: skip
    for arg in _all_args(job.function):
        if arg.annotation is not None and _names(arg.annotation) & BYTES_TYPES:
            out.append(finding(
                "payload-bytes",
                f"job '{model.name}' takes {arg.arg}: {ast.unparse(arg.annotation)}; payloads "
                "are JSON, so dispatching it raises PayloadError.",
                "take a str (a path, an object-store key, or base64 text) instead of bytes",
                Source(job.module.rel, arg.lineno), job=model.name))  # fmt: skip
    if _matches(job, batch_members):
        out += _adds_inside_batch(model, job)
    return out


def _client_findings(model: JobModel) -> list[Finding]:
    out: list[Finding] = []
    limit = model.timeout.amount if model.timeout is not None else None
    for call in model.calls:
        where = f" (in {call.via}())" if call.via else ""
        clocks: tuple[Value, ...] = (call.timeout,) + ((model.timeout,) if model.timeout else ())
        suggestion = suggest_timeout(limit)
        fix = (
            f"pass config=Config(connect_timeout=5, read_timeout={suggestion}, "
            "retries={'max_attempts': 2}) from botocore.config"
            if call.library == "boto3"
            else f"pass timeout={suggestion} to {call.call}(...), below the job's timeout"
        )
        if call.timeout.amount is None:
            out.append(finding(
                "client-timeout-missing",
                f"job '{model.name}' calls {call.call}(){where} with no timeout "
                f"({call.timeout.source}): if the server stops answering, the call waits "
                "until the job's timeout kills it, on every try.",
                fix, call.source, clocks=clocks, job=model.name))  # fmt: skip
        elif limit is not None and call.timeout.amount >= limit:
            out.append(finding(
                "client-timeout-not-below-job",
                f"job '{model.name}' (timeout {limit:g} s) calls {call.call}(){where} with a "
                f"{call.timeout.amount:g} s timeout: the job can be killed mid-call while the "
                "request still completes on the other side, and the retry repeats it.",
                fix, call.source, clocks=clocks, job=model.name))  # fmt: skip
    return out


def _sleep_loops(model: JobModel, job: AstJob) -> list[Finding]:
    out: list[Finding] = []
    for fn in called_helpers(job.function, job.module):
        for node in sleeps_in_loops(fn, job.module):
            out.append(finding(
                "sleep-loop",
                f"job '{model.name}' sleeps in a loop (time.sleep at line "
                f"{node.lineno}): it holds a worker slot while waiting and runs toward "
                "its timeout doing nothing.",
                "end the job and dispatch a follow-up with .options(delay=N).dispatch(...)",
                Source(job.module.rel, node.lineno), job=model.name))  # fmt: skip
    return out


def _adds_inside_batch(model: JobModel, job: AstJob) -> list[Finding]:
    out: list[Finding] = []
    for fn in called_helpers(job.function, job.module):
        for node in job.module.nodes(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ADDERS or "ctx" in ast.unparse(node.func.value):
                continue
            out.append(finding(
                "dispatch-inside-batch",
                f"job '{model.name}' runs inside a batch and calls {ast.unparse(node.func)}(): "
                "those jobs are not part of the batch, so the batch can report done while they "
                "still run.",
                "let the batch's coordinator add them, or make them part of the batch's plan",
                Source(job.module.rel, node.lineno), job=model.name))  # fmt: skip
    return out


def _matches(job: AstJob, names: set[str]) -> bool:
    return job.name in names or job.function.name in names


def _all_args(fn: FunctionNode) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


def _names(expr: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)} | {
        str(n.value) for n in ast.walk(expr) if isinstance(n, ast.Constant)
    }


# -- checks across modules: batches and dispatch sites ----------------------------------------
def batch_members(modules: list[Module]) -> set[str]:
    """Names of jobs that run as members of a batch: `app.batch([job.sig(...)])`,
    `app.batch_over_ids(job, ...)`. Their callbacks (then=, catch=) are not members."""
    members: set[str] = set()
    for module in modules:
        for node in module.nodes():
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "batch_over_ids" and node.args:
                members |= _job_ref(node.args[0])
            elif node.func.attr == "batch" and node.args:
                first = node.args[0]
                items = first.elts if isinstance(first, ast.List | ast.Tuple) else []
                if isinstance(first, ast.ListComp | ast.GeneratorExp):
                    items = [first.elt]
                for item in items:
                    if (
                        isinstance(item, ast.Call)
                        and isinstance(item.func, ast.Attribute)
                        and item.func.attr == "sig"
                    ):
                        members |= _job_ref(item.func.value)
    return members


def _job_ref(expr: ast.expr) -> set[str]:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value  # job.options(...).sig
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Attribute):
        return {expr.attr}
    return set()


def check_dispatch_sites(modules: list[Module], job_names: set[str]) -> list[Finding]:
    """Arguments that cannot or should not travel in a JSON payload."""
    out: list[Finding] = []
    for module in modules:
        for node in module.nodes():
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if (
                node.func.attr not in ("dispatch", "sig")
                or not _job_ref(node.func.value) & job_names
            ):
                continue
            job = next(iter(_job_ref(node.func.value) & job_names))
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                kind = _payload_kind(arg)
                if kind is None:
                    continue
                rule, what = kind
                fix = (
                    "pass a str instead (decode it, or store the bytes and pass their key)"
                    if rule == "payload-bytes"
                    else "store the contents elsewhere (a table, object storage) and pass its id"
                )
                out.append(finding(
                    rule,
                    f"{ast.unparse(node.func)}(...) passes {what} to job '{job}'"
                    + (": JSON payloads cannot carry bytes, so this raises PayloadError."
                       if rule == "payload-bytes"
                       else ": payloads are size-limited and stored with every job and retry."),
                    fix, Source(module.rel, arg.lineno), job=job))  # fmt: skip
    return out


def _payload_kind(arg: ast.expr) -> tuple[str, str] | None:
    if isinstance(arg, ast.Constant):
        if isinstance(arg.value, bytes):
            return "payload-bytes", "a bytes literal"
        if isinstance(arg.value, str) and len(arg.value) > LARGE_LITERAL:
            return "payload-blob", f"a {len(arg.value):,}-character literal"
        return None
    if isinstance(arg, ast.Call):
        func = arg.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in BYTES_CALLS or name in ("bytes", "bytearray"):
            return "payload-bytes", f"bytes ({ast.unparse(arg)})"
        if name in BLOB_CALLS or name == "open":
            return "payload-blob", f"file contents ({ast.unparse(arg)})"
    return None


def relpath(path: str, root: str) -> str:
    """Inside PATH: relative (as SARIF and people want it); outside: absolute."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel

"""Where Celery workers start (Compose, Kubernetes, systemd, supervisord, Procfile, entrypoint
and s6/runit scripts), with the platform's grace around each, and the rules that compare that
grace with how long tasks may run.

On SIGTERM a Celery worker stops taking tasks and waits for the running ones (warm shutdown);
the platform SIGKILLs it when its grace ends. A task still running then is lost when it was
acknowledged at start (the default) or runs again from the start with acks_late.
"""

from __future__ import annotations

import os
import stat

from tenure.doctor.celery.settings import CeleryConfig
from tenure.doctor.laravel.deploy import SEPARATORS, ArtisanWorker, expand, read_workers
from tenure.doctor.model import Finding, Skipped, Source, Value
from tenure.doctor.readers import compose
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, load_documents
from tenure.doctor.rules import finding
from tenure.doctor.walk import (
    IGNORED_DIRS,
    MAX_FILE_BYTES,
    SKIP_DIRS,
    Tree,
    decode,
    is_development_name,
)

CeleryWorker = ArtisanWorker  # command "worker", connection: the -A app, options by long name
SHORT = {"-A": "app", "-c": "concurrency", "-Q": "queues", "-P": "pool", "-l": "loglevel",
         "-n": "hostname", "-O": "optimization"}  # fmt: skip
FLAGS = {"-B", "--beat", "-E", "--task-events", "--without-gossip", "--without-mingle",
         "--without-heartbeat", "--detach"}  # fmt: skip
SCRIPT_NAMES = {"run", "entrypoint", "start", "start-worker", "worker"}


def find_celery(argv: list[str]) -> tuple[str, str | None, dict[str, str]] | None:
    """("worker", app, options) of the first `celery ... worker` in argv."""
    tokens = expand(argv)
    for i, token in enumerate(tokens):
        if os.path.basename(token) != "celery":
            continue
        rest = tokens[i + 1 :]
        end = next((j for j, t in enumerate(rest) if t in SEPARATORS), len(rest))
        rest = rest[:end]
        if "worker" not in rest:
            continue
        options = _options([t for t in rest if t != "worker"])
        return "worker", options.get("app"), options
    return None


def _options(tokens: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in FLAGS or not token.startswith("-"):
            i += 1
            continue
        name, eq, value = token.partition("=")
        if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            value = tokens[i + 1]
            i += 1
        key = SHORT.get(name) or name.lstrip("-")
        if name.startswith("-") and not name.startswith("--") and len(name) > 2:
            key, value = SHORT.get(name[:2], name[1:2]), name[2:]  # -c4, -Qmail
        options[key] = value
        i += 1
    return options


def find_scripts(root: str, skipped: list[Skipped]) -> list[tuple[str, str]]:
    """Shell scripts, Dockerfiles and s6/runit `run` files that mention celery."""
    found: list[tuple[str, str]] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in IGNORED_DIRS | SKIP_DIRS
            and (not d.startswith(".") or d in (".docker", ".s6"))
            and not os.path.islink(os.path.join(directory, d))
        )
        for name in sorted(filenames):
            if not (name.endswith(".sh") or name in SCRIPT_NAMES or name.startswith("Dockerfile")):
                continue
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(MAX_FILE_BYTES)
            except OSError as exc:
                skipped.append(Skipped(os.path.relpath(path, root), f"cannot read: {exc.strerror}"))
                continue
            if b"celery" in data and b"\0" not in data[:4096]:
                found.append((os.path.relpath(path, root), data.decode("utf-8", "replace")))
    return found


def read_launches(tree: Tree) -> tuple[list[CeleryWorker], list[Skipped]]:
    skipped: list[Skipped] = []
    scripts = find_scripts(tree.root, skipped)
    workers, more = read_workers(tree, scripts, find=find_celery, needle="celery")
    return _tie_scripts(tree, workers), skipped + more


def _tie_scripts(tree: Tree, workers: list[CeleryWorker]) -> list[CeleryWorker]:
    """A script worker whose script a Compose service runs gets that service's grace (the
    service names no `celery worker` itself, so it is no launch of its own)."""
    scripts = {os.path.basename(w.source.path or ""): w for w in workers if w.platform == "script"}
    if not scripts:
        return workers
    for found in tree.files["yaml"]:
        if is_development_name(found.rel) or not any(n.encode() in found.data for n in scripts):
            continue
        content = decode(found)
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        for document in documents:
            if not compose.is_compose(document):
                continue
            for name, service in document["services"].items():
                if not isinstance(service, YMap):
                    continue
                argv = [str(v) for key in ("entrypoint", "command")
                        for v in _words(service.get(key))]  # fmt: skip
                for token in argv:
                    worker = scripts.get(os.path.basename(token))
                    if worker is not None and worker.platform_grace is None:
                        worker.platform_grace = compose._grace(found.rel, service, {}, ReadResult())
                        worker.name = f"{worker.name} (run by Compose service {name})"
    return workers


def _words(value: object) -> list[str]:
    if isinstance(value, str):
        return expand([value])
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return []


def check_launches(config: CeleryConfig, workers: list[CeleryWorker]) -> list[Finding]:
    out: list[Finding] = []
    hard = config.settings.get("task_time_limit")
    if hard is not None and not hard.known:
        return out  # unknown: never reported as "no time limit"
    soft = config.settings.get("task_soft_time_limit")
    if soft is not None and not soft.known:
        return out
    # A soft limit bounds a task too: SoftTimeLimitExceeded ends it unless it catches it.
    bounds = [s.value for s in (hard, soft) if s is not None and isinstance(s.value, int | float)]
    global_limit = max(bounds) if bounds else None
    task_limits = [
        (t, o.value)
        for t in config.tasks
        for o in [t.options.get("time_limit")]
        if o is not None and o.known and isinstance(o.value, int | float)
    ]
    for w in workers:
        grace = w.platform_grace
        if grace is None or grace.amount is None:
            continue  # grace unknown (a script no service is seen to run) or unbounded
        own = w.options.get("time-limit")
        limit = _number(own) if own is not None else global_limit
        who = f"Celery worker {w.platform} {w.name}"
        if limit is None:
            out.append(_unbounded(w, who, grace, config))
            continue
        longest = max([limit] + [v for _, v in task_limits])
        if longest > grace.amount:
            where = w.source if own is not None else (hard.source if hard else w.source)
            out.append(finding(
                "celery-grace-below-time-limit",
                f"{who} lets tasks run up to {longest:g} s (time limit), but the platform kills "
                f"it {grace.amount:g} s after SIGTERM: a task running at a deploy is killed "
                "mid-run, lost if acknowledged at start, repeated from the start with acks_late.",
                f"raise the platform grace above {longest:g} s, or lower the time limit below "
                f"{grace.amount:g} s and split longer work",
                w.source,
                clocks=(Value("task time limit", longest, "s", where), grace)))  # fmt: skip
    return out


def _unbounded(w: CeleryWorker, who: str, grace: Value, config: CeleryConfig) -> Finding:
    acks = config.settings.get("task_acks_late")
    late = acks is not None and acks.value is True
    fate = ("runs again from the start (acks_late)" if late
            else "is lost: it was acknowledged when it started")  # fmt: skip
    return finding(
        "celery-task-unbounded",
        f"{who}: tasks have no time limit (no task_time_limit or task_soft_time_limit, no "
        f"--time-limit), and the platform kills the worker {grace.amount:g} s after "
        f"SIGTERM: a task still running at a deploy is killed mid-run and {fate}.",
        f"set task_time_limit (and task_soft_time_limit) below {grace.amount:g} s, or raise the "
        "platform grace above the longest task",
        w.source,
        clocks=(Value("task_time_limit", None, "s", Source(note="Celery default: none")), grace),
    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None

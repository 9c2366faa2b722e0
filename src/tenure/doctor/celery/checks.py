"""The Celery rules: the broker's visibility timeout is the lease; everything that can keep a
message unacknowledged longer than it (late acks, ETA/countdown, prefetch) runs twice."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from tenure.doctor.celery.launches import check_launches, read_launches
from tenure.doctor.celery.routing import resolve
from tenure.doctor.celery.settings import (
    CannotLoad,
    CeleryConfig,
    Delay,
    Setting,
    TaskDef,
    load,
    read_app_overrides,
    read_tree,
)
from tenure.doctor.celery.stopsignal import signal_findings
from tenure.doctor.celery.tasks import read_tasks, settle, task_limits
from tenure.doctor.celery.values import UNKNOWN
from tenure.doctor.model import Finding, Skipped, Source, Value
from tenure.doctor.rules import finding
from tenure.doctor.walk import Tree

# kombu's defaults (FOREIGN.md): Redis 1 h, SQS 30 min; RabbitMQ has no visibility timeout.
VISIBILITY_DEFAULT_S = {"redis": 3600.0, "sqs": 1800.0}
PREFETCH_DEFAULT = 4
MARKERS = (b"countdown", b"eta=", b"acks_late", b"time_limit", b"shared_task", b".task(",
           b".task\n", b"(Task)", b".Task)", b"TASK_ANNOTATIONS", b"task_annotations",
           b"config_from_object(", b"send_task(", b"apply_async(", b"\"task\":",
           b"'task':", b"DEFAULT_QUEUE", b"default_queue")  # fmt: skip
TRANSPORTS = {
    "redis": "redis",
    "rediss": "redis",
    "sentinel": "redis",
    "sqs": "sqs",
    "amqp": "rabbitmq",
    "amqps": "rabbitmq",
    "pyamqp": "rabbitmq",
    "librabbitmq": "rabbitmq",
}

__all__ = ["CannotLoad", "CeleryAudit", "audit"]


@dataclass
class CeleryAudit:
    findings: list[Finding]
    skipped: list[Skipped]
    workers: list[str]  # where each worker starts, for the report's notes
    tasks: int = 0
    # (file, task name) -> the task's time limit, when known: for the calls its code makes.
    limits: dict[tuple[str, str], Value] = field(default_factory=dict)


def audit(spec: str, base: str, tree: Tree) -> CeleryAudit:
    """`tree`: the project's files: Python ones are searched for task options and
    countdown/eta, deployment files and scripts for the commands that start workers."""
    config = load(spec, base)
    seen = False
    for found in tree.files["python"]:
        if not any(m in found.data for m in MARKERS):
            continue
        try:
            module = ast.parse(found.data, filename=found.path)
        except (SyntaxError, ValueError, RecursionError):
            config.skipped.append(Skipped(found.rel, "cannot parse as Python"))
            continue
        rel = os.path.relpath(found.path, base)
        if not config.path or os.path.realpath(found.path) != os.path.realpath(config.path):
            read_tree(config, module, rel, settings=False, base=base)
            if b"config_from_object(" in found.data:  # the app module loading the settings
                read_app_overrides(config, module, rel)
        read_tasks(config, module, rel)
        seen = seen or os.path.realpath(found.path) == os.path.realpath(config.path or "")
    if config.path and not seen:  # a settings file outside the tree read: its own tasks
        try:
            with open(config.path, "rb") as handle:
                read_tasks(config, ast.parse(handle.read()), os.path.relpath(config.path, base))
        except (OSError, SyntaxError, ValueError, RecursionError):
            pass  # said by load() already
    settle(config)
    resolve(config, tree)
    workers, skipped = read_launches(tree)
    findings = check(config) + check_launches(config, workers) + signal_findings(workers)
    places = [f"{w.source} ({w.platform})" for w in workers]
    limits = task_limits(config)
    return CeleryAudit(findings, config.skipped + skipped, places, len(config.tasks), limits)


def _get(config: CeleryConfig, key: str, default: object, note: str) -> Setting:
    found = config.settings.get(key)
    if found is None or (found.known and found.value is None and default is not None):
        return Setting(default, Source(note=f"Celery default: {note}"))
    return found


def _task_reject_loops(config: CeleryConfig, acks_late: Setting, reject: Setting) -> list[Finding]:
    """The same loop set on one task (`@shared_task(acks_late=True, reject_on_worker_lost=True)`):
    a task's own option wins over the app's, as in Celery. When the app turns both on, the
    settings' finding already covers every task."""
    if acks_late.value is True and reject.value is True:
        return []
    out: list[Finding] = []
    for task in config.tasks:
        own_ack, own_reject = (
            task.options.get("acks_late"),
            task.options.get("reject_on_worker_lost"),
        )
        if own_ack is None and own_reject is None:
            continue
        if (own_ack or acks_late).value is True and (own_reject or reject).value is True:
            out.append(finding(
                "celery-reject-on-worker-lost-loop",
                f"task '{task.name}' runs with acks_late and reject_on_worker_lost: when it "
                "kills its worker process (OOM, segfault, kill -9) it is requeued and taken "
                "again, forever, without counting as a retry.",
                "drop reject_on_worker_lost=True, or count redeliveries in the task and give up",
                task.source))  # fmt: skip
    return out


def _where(config: CeleryConfig, setting: Setting, base_rel: str | None) -> Source:
    if setting.source.path:
        return setting.source
    return Source(base_rel, None, setting.source.note)


def check(config: CeleryConfig) -> list[Finding]:
    rel = config.settings["broker_url"].source.path if "broker_url" in config.settings else None
    home = rel or next((s.source.path for s in config.settings.values() if s.source.path), None)
    out: list[Finding] = []
    acks_late = _get(config, "task_acks_late", False, "task_acks_late False")
    reject = _get(config, "task_reject_on_worker_lost", False, "task_reject_on_worker_lost False")
    hard = _get(config, "task_time_limit", None, "no task_time_limit")
    prefetch = _get(
        config, "worker_prefetch_multiplier", PREFETCH_DEFAULT, "worker_prefetch_multiplier 4"
    )
    if acks_late.value is True and reject.value is True:
        out.append(
            finding(
                "celery-reject-on-worker-lost-loop",
                "task_acks_late and task_reject_on_worker_lost are both on: a task that kills its "
                "worker process (OOM, segfault, kill -9) is requeued and taken again, forever, "
                "without counting as a retry.",
                "turn task_reject_on_worker_lost off, or cap redeliveries in the task itself",
                _where(config, reject, home),
            )
        )
    out += _task_reject_loops(config, acks_late, reject)
    out += _pickle(config, home)
    visibility = _visibility(config, home)
    if visibility is None:
        return out
    limit = Value(
        "task_time_limit",
        hard.value if isinstance(hard.value, int | float) else None,
        "s",
        _where(config, hard, home),
    )
    if not hard.known:
        # Written but not resolvable (an env() read): unknown, never "no time limit". Tasks
        # with their own time_limit and the countdowns are still compared; the rest is said.
        config.skipped.append(Skipped(
            str(limit.source), "task_time_limit is read from the environment: unknown, so the "
            "checks that compare it were skipped for tasks without their own limit"))  # fmt: skip
    late_tasks = [
        t for t in config.tasks if t.options.get("acks_late", Setting(None, Source())).value is True
    ]
    if acks_late.value is True and hard.known:
        # "No time limit" says nothing of how long tasks run (celery-task-unbounded speaks to
        # that where a deploy makes it matter): only a limit past the timeout is a finding,
        # the global one or, without it, a task's own (on its time_limit line).
        over = [t for t in config.tasks if _own_limit_over(t, limit) and _late_task(t)]
        every = [] if limit.amount is None else _late(
            limit, visibility, "every task (task_acks_late)", _where(config, acks_late, home)
        )  # fmt: skip
        out += every
        # A task's own time_limit replaces the global one: a longer one is checked by itself
        # (once the global limit is already past the visibility timeout, that says it all).
        late_tasks = [] if every else over
    elif acks_late.value is True:
        late_tasks = [t for t in config.tasks if t.options.get("acks_late") is None or
                      t.options["acks_late"].value is not False]  # fmt: skip
    unbounded = _unbounded_late(config, acks_late, limit) if hard.known else []
    out += _unbounded_past_visibility(unbounded, visibility)
    for task in late_tasks:
        own = task.options.get("time_limit")
        at = task.source
        if own and isinstance(own.value, int | float):
            task_limit = Value(f"{task.name} time_limit", own.value, "s", own.source)
            at = own.source if own.source.line else at  # the limit that passes the timeout
        elif hard.known and limit.amount is not None:
            task_limit = limit
        else:
            continue
        out += _late(task_limit, visibility, f"task {task.name} (acks_late=True)", at)
    for delay in config.delays:
        if delay.seconds is None and delay.grows and visibility.amount:
            out.append(_growing_delay(delay, visibility))
        if delay.seconds is not None and delay.seconds >= (visibility.amount or 0):
            out.append(
                finding(
                    "celery-eta-beyond-visibility",
                    f"{delay.call} delays a task {delay.seconds:g} s, past the broker's visibility "
                    f"timeout of {visibility.amount:g} s: the waiting message is redelivered and "
                    "the "
                    "task runs once per redelivery.",
                    f"raise visibility_timeout above {delay.seconds:g} s, or schedule it with beat",
                    delay.source,
                    clocks=(Value("countdown/eta", delay.seconds, "s", delay.source), visibility),
                )
            )
    multiplier = prefetch.value if isinstance(prefetch.value, int) else PREFETCH_DEFAULT
    # With no time limit and early acks, how long tasks run is unknown: celery-task-unbounded
    # speaks to that where a deploy makes it matter; guessing here made every app a finding.
    # A visibility timeout the project chose, under late-acked tasks with no limit, is said.
    if multiplier > 1 and (
        (hard.known and limit.amount is not None
         and multiplier * limit.amount >= (visibility.amount or 0))
        or (unbounded and limit.amount is None and visibility.source.line is not None)
    ):  # fmt: skip
        waits = (
            "tasks with no time limit"
            if limit.amount is None
            else f"{multiplier} tasks of up to {limit.amount:g} s"
        )
        out.append(
            finding(
                "celery-prefetch-outlives-visibility",
                f"each worker process reserves {multiplier} messages; one waiting behind {waits} "
                f"can pass the {visibility.amount:g} s visibility timeout and be delivered to a "
                "second worker.",
                "worker_prefetch_multiplier = 1 for long tasks, and a task_time_limit",
                _prefetch_site(config, prefetch, visibility, home),
                clocks=(limit, visibility),
            )
        )
    return out


def _visibility(config: CeleryConfig, home: str | None) -> Value | None:
    broker = config.settings.get("broker_url")
    options = config.settings.get("broker_transport_options")
    transport = None
    if (
        broker is not None
        and broker.known
        and isinstance(broker.value, str)
        and "://" in broker.value
    ):
        transport = TRANSPORTS.get(broker.value.split("://", 1)[0].split("+")[0].lower(), "other")
    written = (
        options.value.get("visibility_timeout")
        if options and isinstance(options.value, dict)
        else None
    )
    if transport is None and broker is not None:
        transport = _redis_by_shape(config, options)
    if transport in ("rabbitmq", "other"):
        return None  # no visibility timeout: unacked messages return when the connection drops
    if written is UNKNOWN:
        assert options is not None
        config.skipped.append(Skipped(str(_where(config, options, home)), (
            "broker_transport_options visibility_timeout is read from the environment: unknown, "
            "so the checks against the visibility timeout were skipped")))  # fmt: skip
        return None
    if isinstance(written, int | float):
        assert options is not None
        return Value(
            "broker visibility_timeout", float(written), "s", _where(config, options, home)
        )
    if transport is None:
        config.skipped.append(
            Skipped(
                home or config.spec,
                "broker URL not readable (environment?): visibility timeout checks skipped",
            )
        )
        return None
    note = f"kombu {transport} default, broker_transport_options has no visibility_timeout"
    return Value(
        "broker visibility_timeout", VISIBILITY_DEFAULT_S[transport], "s", Source(note=note)
    )


# Options only kombu's Redis transport reads: a project that sets them runs on Redis.
REDIS_ONLY = {"queue_order_strategy", "sep", "priority_steps", "global_keyprefix",
              "health_check_interval", "fanout_prefix", "fanout_patterns"}  # fmt: skip


def _redis_by_shape(config: CeleryConfig, options: Setting | None) -> str | None:
    """The broker URL is built where the doctor cannot read it (an f-string of settings, an
    environment read) but says what it is: built from REDIS_* names or a `redis://` literal,
    or given transport options only the Redis transport knows."""
    text = config.unresolved.get("broker_url", "")
    if re.search(r"redis", text, re.IGNORECASE) and not re.search(
        r"amqp|sqs|rabbit", text, re.IGNORECASE
    ):
        return "redis"
    if options is not None and isinstance(options.value, dict) and REDIS_ONLY & set(options.value):
        return "redis"
    return None


def _unbounded_late(config: CeleryConfig, acks_late: Setting, limit: Value) -> list[TaskDef]:
    """Late-acknowledged tasks with no time limit at all (no global one, none of their own)."""
    if limit.amount is not None:
        return []
    return [t for t in config.tasks
            if (_late_task(t) if acks_late.value is True else
                t.options.get("acks_late", Setting(None, Source())).value is True)
            and "time_limit" not in t.options]  # fmt: skip


def _unbounded_past_visibility(tasks: list[TaskDef], visibility: Value) -> list[Finding]:
    """A visibility timeout the project wrote, under acks_late tasks that may run past it: a
    warning, since how long they run is unknown, on the visibility_timeout line."""
    if not tasks or visibility.source.line is None or visibility.amount is None:
        return []
    names = (
        ("task " if len(tasks) == 1 else "tasks ")
        + ", ".join(t.name for t in tasks[:3])
        + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    )
    return [
        finding(
            "celery-visibility-below-time-limit",
            f"visibility_timeout is {visibility.amount:g} s and acks_late {names} "
            f"{'has' if len(tasks) == 1 else 'have'} no time limit: one still running then is "
            "redelivered to another worker and runs twice at once.",
            f"give these tasks a time_limit below {visibility.amount:g} s, or raise "
            "visibility_timeout above the longest of them",
            visibility.source,
            clocks=(Value("task time limit", None, "s", tasks[0].source), visibility),
            severity="warning",
        )
    ]


def _prefetch_site(config: CeleryConfig, prefetch: Setting, visibility: Value,
                   home: str | None) -> Source:  # fmt: skip
    """The multiplier's line; left at its default, the visibility_timeout line it outlives."""
    if prefetch.source.line is None and visibility.source.line is not None:
        return visibility.source
    return _where(config, prefetch, home)


def _late_task(task: TaskDef) -> bool:
    """Acknowledged late under task_acks_late: unless it turns acks_late off itself."""
    return task.options.get("acks_late") is None or task.options["acks_late"].value is not False


def _own_limit_over(task: TaskDef, limit: Value) -> bool:
    own = task.options.get("time_limit")
    if own is None or not isinstance(own.value, int | float) or isinstance(own.value, bool):
        return False
    return limit.amount is None or own.value > limit.amount


def _late(limit: Value, visibility: Value, who: str, at: Source) -> list[Finding]:
    assert visibility.amount is not None
    if limit.amount is not None and limit.amount < visibility.amount:
        return []
    runs = "has no time limit" if limit.amount is None else f"may run {limit.amount:g} s"
    return [
        finding(
            "celery-visibility-below-time-limit",
            f"{who} is acknowledged only when it ends and {runs}, but the broker redelivers an "
            f"unacknowledged message after {visibility.amount:g} s: a long task runs twice "
            "at once.",
            f"set task_time_limit below {visibility.amount:g} s, or raise visibility_timeout above "
            "the longest task",
            at,
            clocks=(limit, visibility),
        )
    ]


def _pickle(config: CeleryConfig, home: str | None) -> list[Finding]:
    """Only what a consumer accepts runs code: a pickle serializer whose content is not
    accepted is refused (accept_content defaults to json), and restating it is noise."""
    out = []
    for key in ("accept_content", "result_accept_content"):
        setting = config.settings.get(key)
        if setting is None or not setting.known:
            continue
        value = setting.value
        values = list(value) if isinstance(value, list | tuple | set) else [value]
        if any(
            isinstance(v, str) and v.split("/")[-1].lower() in ("pickle", "x-python-serialize")
            for v in values
        ):
            out.append(
                finding(
                    "celery-pickle-enabled",
                    f"{key} includes pickle: anyone who can write a message to the broker can run "
                    "code in every worker.",
                    f"{key} = ['json'] (sign messages with celery.security if pickle is required)",
                    _where(config, setting, home),
                )
            )
    return out


def _growing_delay(delay: Delay, visibility: Value) -> Finding:
    """A countdown spread over a loop's items (`index * delay`) with no cap: a long enough
    list passes the visibility timeout, and every send past it runs once per redelivery."""
    return finding(
        "celery-eta-beyond-visibility",
        f"{delay.call} delays each item of a loop by {delay.grows}, with no cap: once the list is "
        f"long enough the delay passes the broker's visibility timeout of "
        f"{visibility.amount:g} s, and those messages are redelivered and run once per "
        "redelivery.",
        f"cap the countdown below {visibility.amount:g} s (min(...)), or throttle with a "
        "rate_limit instead of spreading the sends",
        delay.source,
        clocks=(Value("countdown/eta", None, "s", delay.source), visibility),
    )

"""Where Celery workers start (Compose, Kubernetes, systemd, supervisord, Procfile, entrypoint
and s6/runit scripts), with the platform's grace around each, and the rules that compare that
grace with how long tasks may run.

On SIGTERM a Celery worker stops taking tasks and waits for the running ones (warm shutdown);
the platform SIGKILLs it when its grace ends. A task still running then is lost when it was
acknowledged at start (the default) or runs again from the start with acks_late.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from tenure.doctor.celery.coldstop import cold_stops
from tenure.doctor.celery.commands import expand_arrays, expand_evaluated
from tenure.doctor.celery.pylaunch import Launchers
from tenure.doctor.celery.routing import served
from tenure.doctor.celery.settings import CeleryConfig, TaskDef
from tenure.doctor.celery.stopsignal import read_stop_signals
from tenure.doctor.celery.values import UNKNOWN
from tenure.doctor.dockerfile import copied_files
from tenure.doctor.laravel.deploy import SEPARATORS, ArtisanWorker, expand, read_workers
from tenure.doctor.model import Finding, Skipped, Source, Value
from tenure.doctor.readers.development import development_units, overlay_units
from tenure.doctor.readers.worker_command import interpolate
from tenure.doctor.rules import finding, once_per_unit
from tenure.doctor.tie import resolved_runners, tie
from tenure.doctor.walk import (
    IGNORED_DIRS,
    MAX_FILE_BYTES,
    SKIP_DIRS,
    Tree,
    holds_image,
    is_dockerfile,
    is_template_folder,
)

CeleryWorker = ArtisanWorker  # command "worker", connection: the -A app, options by long name
SHORT = {"-A": "app", "-c": "concurrency", "-Q": "queues", "-P": "pool", "-l": "loglevel",
         "-n": "hostname", "-O": "optimization"}  # fmt: skip
FLAGS = {"-B", "--beat", "-E", "--task-events", "--without-gossip", "--without-mingle",
         "--without-heartbeat", "--detach"}  # fmt: skip
SCRIPT_NAMES = {"run", "entrypoint", "start", "start-worker", "worker"}


def find_celery(argv: list[str]) -> tuple[str, str | None, dict[str, str]] | None:
    """("worker", app, options) of the first `celery ... worker` in argv that is a command:
    `celery` in command position (after wrappers such as exec, gosu USER, nice -n N, python -m)
    and `worker` its sub-command, so `echo "Starting celery worker"` and a help text are not."""
    tokens = expand(argv)
    start = 0
    for i, token in enumerate(tokens):
        if token in SEPARATORS:
            start = i + 1
            continue
        if _name(token) != "celery" or not _command_position(tokens[start:i]):
            continue
        rest = tokens[i + 1 :]
        end = next((j for j, t in enumerate(rest) if t in SEPARATORS), len(rest))
        words = rest[:end]
        sub = _subcommand(words)
        if sub == "multi" and "start" in words:
            # `celery multi start w1 w2 ...`: workers daemonized by celery itself.
            names = words[words.index("start") + 1 :]
            words = [t for t in words if t not in ("multi", "start")]
            words = [t for t in words if t.startswith("-") or t not in names[: _names(names)]]
            options = _options(words)
            options["multi"] = "true"
            return "worker", options.get("app"), options
        if sub != "worker":
            continue
        options = _options([t for t in words if t != "worker"])
        return "worker", options.get("app"), options
    return None


WRAPPERS = {"exec", "nice", "nohup", "env", "sudo", "su", "gosu", "su-exec", "chpst", "tini",
            "setuidgid", "s6-setuidgid", "runuser", "dumb-init", "--", "-m", "ddtrace-run",
            "newrelic-admin", "run-program", "opentelemetry-instrument", "watchmedo",
            "auto-restart", "poetry", "uv", "pipenv", "pdm", "hatch", "rye", "run",
            "sh", "bash", "dash", "ash"}  # fmt: skip
# Heroku buildpacks' launchers (bin/start-pgbouncer, bin/start-nginx, bin/start-stunnel) start
# a helper, then exec the command they are given: `worker: bin/start-pgbouncer celery worker`.
BUILDPACK_LAUNCHER = re.compile(r"start-(?:pgbouncer|nginx|stunnel)(?:-[\w]+)*")
TAKES_USER = {"gosu", "su-exec", "su", "setuidgid", "s6-setuidgid", "runuser", "-u"}
# Celery's global options that take a value (celery -A proj -b URL worker ...).
GLOBAL_VALUES = {"-A", "--app", "-b", "--broker", "--result-backend", "--workdir", "--config"}


def _names(words: list[str]) -> int:
    """How many node names follow `celery multi start` (up to the first option)."""
    return next((i for i, w in enumerate(words) if w.startswith("-")), len(words))


# Programs that print, search or signal, or install: `celery` after them is an argument, not
# their sub-command.
NOT_LAUNCHERS = {"echo", "printf", "print", "log", "info", "warn", "error", "logger", "grep",
                 "egrep", "pgrep", "pkill", "kill", "killall", "ps", "cat", "test", "which",
                 "command", "type", "pip", "pip3", "apt-get", "apk", "yum", "man", "help",
                 "docker", "kubectl", "show"}  # fmt: skip


def _command_position(prefix: list[str]) -> bool:
    """`celery` is a program here: after wrappers (exec, gosu USER, nice -n N, python -m,
    newrelic-admin run-program), or as the sub-command of the project's own CLI that the last
    word names (`hypothesis celery worker`, `invenio celery worker`)."""
    if prefix and _cli(prefix[-1]) and _command_position(prefix[:-1]):
        return True
    previous, flag = "", False
    for token in prefix:
        name = _name(token)
        ok = (
            not name  # a bare $VARIABLE: a nice level, a wrapper chosen at deploy time
            or name in WRAPPERS
            or BUILDPACK_LAUNCHER.fullmatch(name) is not None
            or name.startswith("python")
            or token.startswith("-")
            or "=" in token
            or token.isdigit()
            or previous in TAKES_USER
            or flag  # a wrapper's option value: watchmedo auto-restart -p '*.py' -- celery
        )
        if not ok:
            return False
        previous, flag = name, token.startswith("-") and token != "--" and "=" not in token
    return True


def _cli(token: str) -> bool:
    name = _name(token)
    return (
        re.fullmatch(r"[a-z][\w.-]*", name) is not None
        and name not in NOT_LAUNCHERS | WRAPPERS
        and not name.startswith("python")
    )


def _name(token: str) -> str:
    """The program a token names: `${BIN_DIR}celery` and `/venv/bin/celery` are celery, and
    so is `${CELERY_BIN}`, the variable Celery's daemonizing guide runs it by."""
    if BIN_VARIABLE.fullmatch(token):
        return "celery"
    return os.path.basename(VARIABLE.sub("", token))


BIN_VARIABLE = re.compile(r"\$\{?CELERY_BIN\}?")


VARIABLE = re.compile(r"\$\{\w+(?::?[-=+?][^}]*)?\}|\$\w+")


def _subcommand(rest: list[str]) -> str | None:
    i = 0
    while i < len(rest):
        token = rest[i]
        if not token.startswith("-"):
            return token
        i += 2 if token in GLOBAL_VALUES else 1
    return None


def _options(tokens: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in FLAGS or not token.startswith("-"):
            if VARIABLE.fullmatch(token):
                # `$CELERYD_OPTS`: options the doctor cannot see (a time limit among them?)
                options["opaque"] = token
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


def find_scripts(
    root: str, skipped: list[Skipped], words: set[str] | None = None
) -> list[tuple[str, str]]:
    """Shell scripts and s6/runit `run` files that mention celery (or one of `words`: a
    command of the project that starts a worker from Python), every Dockerfile, and the
    files a Dockerfile copies into its image that mention them, whatever their name."""
    needles = [b"celery", *sorted(w.encode() for w in words or ())]
    paths: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if (d not in IGNORED_DIRS | SKIP_DIRS or holds_image(os.path.join(directory, d)))
            and (not d.startswith(".") or d in (".docker", ".s6"))
            and not is_template_folder(d)
            and not os.path.islink(os.path.join(directory, d))
        )
        paths += [
            os.path.join(directory, name)
            for name in sorted(filenames)
            if name.endswith(".sh") or name in SCRIPT_NAMES or is_dockerfile(name)
        ]
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    while paths:
        path = paths.pop(0)
        if path in seen:
            continue
        seen.add(path)
        data = _read(root, path, skipped)
        if data is None or b"\0" in data[:4096]:
            continue
        text = data.decode("utf-8", "replace")
        if is_dockerfile(os.path.basename(path)):
            # Every Dockerfile: one that runs a worker script names no celery itself.
            found.append((os.path.relpath(path, root), text))
            paths += [p for p in copied_files(root, path, text) if p not in seen]
        elif any(needle in data for needle in needles):
            found.append((os.path.relpath(path, root), expand_evaluated(expand_arrays(text))))
    return found


def _read(root: str, path: str, skipped: list[Skipped]) -> bytes | None:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read(MAX_FILE_BYTES)
    except OSError as exc:
        skipped.append(Skipped(os.path.relpath(path, root), f"cannot read: {exc.strerror}"))
        return None


def read_launches(tree: Tree) -> tuple[list[CeleryWorker], list[Skipped]]:
    skipped: list[Skipped] = []
    launchers = Launchers(tree)
    words = launchers.words()
    scripts = find_scripts(tree.root, skipped, words)
    find = launchers.finder(find_celery)
    workers, more = read_workers(tree, scripts, find=find, needle="celery", also=tuple(words))
    # A development Compose service (a `celery-dev` with the source mounted) is no deployment.
    composed = {w.unit.path for w in workers if w.platform == "compose" and w.unit is not None}
    development = development_units(tree, {p for p in composed if p})
    workers = [w for w in workers if not _in(w.unit, development)]
    workers = _without_overlays(tree, workers, {p for p in composed if p})
    runners = resolved_runners(tree, dict(scripts))
    tied = tie(tree, workers, dict(scripts), runners)
    cold_stops(tree.root, tied)
    read_stop_signals(tree.root, tied, runners, dict(scripts))
    return tied, skipped + more


def _in(unit: Source | None, units: set[tuple[str, int]] | dict[tuple[str, int], Any]) -> bool:
    return unit is not None and (unit.path or "", unit.line or 0) in units


def _without_overlays(
    tree: Tree, workers: list[CeleryWorker], paths: set[str]
) -> list[CeleryWorker]:
    """An overlay's service that only changes the worker's command is the base file's unit:
    its worker is dropped when the base file's same service is a worker too."""
    overlays = overlay_units(tree, paths)
    if not overlays:
        return workers
    composed = [(w, _key(w.unit)) for w in workers if w.platform == "compose" and w.unit]
    based = {(os.path.dirname(k[0]), w.name) for w, k in composed if k not in overlays}
    dropped = {id(w) for w, k in composed if overlays.get(k) in based}
    return [w for w in workers if id(w) not in dropped]


def _key(unit: Source) -> tuple[str, int]:
    return unit.path or "", unit.line or 0


def check_launches(config: CeleryConfig, workers: list[CeleryWorker]) -> list[Finding]:
    """An unknown global time limit (read from an environment the doctor cannot see) is said,
    not taken as "no limit": the tasks with their own limit, the workers given one on their
    command line and the memory check are still compared."""
    out: list[Finding] = []
    hard = config.settings.get("task_time_limit")
    soft = config.settings.get("task_soft_time_limit")
    unknown = [s for s in (hard, soft) if s is not None and not s.known]
    # A soft limit bounds a task too: SoftTimeLimitExceeded ends it unless it catches it.
    bounds = [s.value for s in (hard, soft) if s is not None and isinstance(s.value, int | float)]
    global_limit = UNKNOWN if unknown else (max(bounds) if bounds else None)
    said = False
    for w in workers:
        _open_opaque(w)
        out += _memory(config, w)
        grace = w.platform_grace
        if grace is None or grace.amount is None:
            continue  # grace unknown (a script no service is seen to run) or unbounded
        # --time-limit or --soft-time-limit on the command line: either ends a task.
        given = [_option(w, k) for k in ("time-limit", "soft-time-limit") if k in w.options]
        numbers = [v for v in given if isinstance(v, float)]
        # `--time-limit=$LIMIT`, or `$CELERYD_OPTS` that may hold one, with no limit in sight.
        unresolved = (UNKNOWN in given or ("opaque" in w.options and global_limit is None)) and (
            not numbers
        )
        default = UNKNOWN if unresolved else max(numbers, default=global_limit)
        tasks, undecided = served(config, w)
        who = f"Celery worker {w.platform} {w.name}"
        if not tasks and config.tasks and w.options.get("queues") and default is None:
            # Bound to queues no task of the project is seen to reach: its tasks come from
            # elsewhere (an installed package) or by routing the doctor cannot follow.
            config.skipped.append(Skipped(str(w.source), (
                f"{who} reads queues {w.options['queues']}: no task of the project is seen "
                f"to reach them ({undecided} tasks' routing not followed), so it was not "
                "called unbounded: its tasks' limits are not known")))  # fmt: skip
            continue
        limits = [_task_limit(t, default) for t in tasks]
        if UNKNOWN in limits or (not limits and default is UNKNOWN):
            if unresolved:
                config.skipped.append(Skipped(str(w.source), (
                    f"{who}: its time limit is read from an environment variable the doctor "
                    f"cannot see ({w.options.get('opaque') or '--time-limit'}): unknown, so "
                    "tasks without their own limit were not compared with its platform "
                    "grace")))  # fmt: skip
            elif not unknown:  # a task's own limit is an expression (send_task(..., t))
                config.skipped.append(Skipped(str(w.stop_site()), (
                    f"{who}: a task's time limit is set where it is sent, to a value the doctor "
                    "cannot resolve: unknown, so it was not compared with the platform grace, "
                    "and not called unbounded either")))  # fmt: skip
            elif not said:
                config.skipped.append(Skipped(str(w.source), (
                    f"the task time limit ({unknown[0].source}) is read from the environment: "
                    "unknown, so tasks without their own limit were not compared with this "
                    "worker's platform grace")))  # fmt: skip
                said = True
        # A task with no limit at all is unbounded whatever another task's unresolved one is.
        if None in limits or (not limits and default is None):
            out.append(_unbounded(w, who, grace, config))
        known = [v for v in [*limits, default] if isinstance(v, int | float)]
        longest = max(known, default=None)
        if longest is not None and longest > grace.amount:
            by = _longest_task(tasks, longest)
            out.append(finding(
                "celery-grace-below-time-limit",
                f"{who} lets tasks run up to {longest:g} s ({by}), but the platform kills "
                f"it {grace.amount:g} s after SIGTERM: a task running at a deploy is killed "
                "mid-run, lost if acknowledged at start, repeated from the start with acks_late.",
                f"raise the platform grace above {longest:g} s, or lower the time limit below "
                f"{grace.amount:g} s and split longer work",
                w.stop_site(),
                clocks=(Value("task time limit", longest, "s", _limit_source(config, w, longest)),
                        grace)))  # fmt: skip
    return once_per_unit(out)


def _open_opaque(w: CeleryWorker) -> None:
    """`$OPENWISP_CELERY_COMMAND_FLAGS` that the runner's environment resolved (tie) to
    `--concurrency=1`: its options are read, and it hides no time limit any more."""
    passed = w.options.pop("passed", None)
    if passed:  # the arguments a shell function's call gives its `celery ... "$@"`
        for key, value in _options(passed.split()).items():
            w.options.setdefault(key, value)
    raw = w.options.get("opaque")
    if raw is None or "$" in raw:
        return
    del w.options["opaque"]
    for key, value in _options(raw.split()).items():
        w.options.setdefault(key, value)


def _longest_task(tasks: list[TaskDef], longest: float) -> str:
    """Which task may run that long, for the message: one finding per worker, not per task."""
    for task in tasks:
        for key in ("time_limit", "soft_time_limit"):
            own = task.options.get(key)
            if own is not None and own.value == longest:
                # A limit computed where the task is sent: the least it can be (floors.py).
                least = own.source.note if (own.source.note or "").startswith("at least") else ""
                return f"task {task.name}'s {key}" + (f", {least}" if least else "")
    return "time limit"


def _limit_source(config: CeleryConfig, w: CeleryWorker, longest: float) -> Source:
    """Where the longest limit was set: a setting (with its default note) or the command."""
    for task in config.tasks:
        for key in ("time_limit", "soft_time_limit"):
            own = task.options.get(key)
            if own is not None and own.value == longest and own.source.path:
                return Source(own.source.path, own.source.line, f"task {task.name} {key}")
    for key in ("time-limit", "soft-time-limit"):
        if key in w.options and _number(w.options[key]) == longest and key in w.option_notes:
            return Source(w.source.path, w.source.line, f"--{key}: {w.option_notes[key]}")
    for key in ("task_time_limit", "task_soft_time_limit"):
        setting = config.settings.get(key)
        if setting is not None and setting.value == longest and setting.source.path:
            return setting.source
    return w.source


def _memory(config: CeleryConfig, w: CeleryWorker) -> list[Finding]:
    """Celery replaces a child only after a task that left it above max_memory_per_child
    (kilobytes); when every child may reach it together, the container's limit comes first
    and the kernel kills the whole worker."""
    limit = w.memory_limit
    if limit is None or limit.amount is None:
        return []
    per_child = _setting_number(config, "worker_max_memory_per_child", w, "max-memory-per-child")
    children = _setting_number(config, "worker_concurrency", w, "concurrency")
    if per_child is None or children is None:
        return []  # without both the doctor cannot tell; concurrency defaults to the CPU count
    budget_mb = per_child[0] / 1024 * children[0]
    if budget_mb < limit.amount:
        return []
    return [finding(
        "celery-memory-per-child-over-limit",
        f"Celery worker {w.platform} {w.name} lets {children[0]:g} children grow to "
        f"{per_child[0] / 1024:g} MB each ({budget_mb:g} MB) under a {limit.amount:g} MB memory "
        "limit: the kernel OOM-kills the container, with every running task, before Celery "
        "replaces a child.",
        f"set worker_max_memory_per_child below {int(limit.amount * 0.8 / children[0] * 1024)} "
        "(KB), or raise the memory limit",
        limit.source if limit.source.path else w.stop_site(),
        clocks=(Value("max_memory_per_child", per_child[0] / 1024, "MB",
                                    per_child[1]), limit))]  # fmt: skip


def _setting_number(
    config: CeleryConfig, key: str, w: CeleryWorker, option: str
) -> tuple[float, Source] | None:
    if option in w.options:
        value = _option(w, option)
        return (value, w.source) if isinstance(value, float) else None
    setting = config.settings.get(key)
    if setting is not None and isinstance(setting.value, int | float):
        return float(setting.value), setting.source
    return None


def _task_limit(task: TaskDef, default: Any) -> Any:
    """A task's own time_limit/soft_time_limit when it sets one, else the worker's; UNKNOWN
    when it sets one the doctor cannot resolve (never "no limit")."""
    written = [task.options.get(key) for key in ("time_limit", "soft_time_limit")]
    if any(o is not None and not o.known for o in written) and not any(
        o is not None and o.known and isinstance(o.value, int | float) for o in written
    ):
        return UNKNOWN
    own = [
        o.value
        for key in ("time_limit", "soft_time_limit")
        for o in [task.options.get(key)]
        if o is not None and o.known and isinstance(o.value, int | float)
    ]
    return max(own) if own else default


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
        w.stop_site(),
        clocks=(Value("task_time_limit", None, "s", Source(note="Celery default: none")), grace),
    )


def _option(w: CeleryWorker, key: str) -> Any:
    """A numeric worker option: its number, the default of `${VAR:-300}` (said in the
    worker's notes), UNKNOWN for a variable without one, None when not a number at all."""
    raw = w.options[key]
    value = _number(raw)
    if value is not None or "$" not in raw:
        return value
    resolved = interpolate(raw, {})
    if resolved is None:
        return UNKNOWN
    value = _number(resolved)
    if value is not None:
        w.option_notes.setdefault(key, f"the default of {raw}, unless the environment sets it")
        w.options[key] = resolved
    return value


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None

"""What the Laravel rules look at: the project as read (config, env, jobs, workers) and its
*runners*, whatever executes jobs with a timeout: a `queue:work`/`queue:listen` command, a
Horizon supervisor, or, when the project shows none, the worker Laravel starts by default.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from tenure.doctor.laravel.config import LOCAL_ENVS, Config
from tenure.doctor.laravel.deploy import ArtisanWorker
from tenure.doctor.laravel.jobs import BatchSite, JobClass, prop_string
from tenure.doctor.laravel.php import EnvEntry, EnvFiles, Resolved, as_number
from tenure.doctor.model import Skipped, Source, Value

# Words naming an env file a template to copy rather than the running configuration.
TEMPLATE_WORDS = {"example", "sample", "dist", "template", "default", "defaults"}
WORKER_TIMEOUT_DEFAULT_S = 60.0
MARGIN_S = 5.0


@dataclass
class Runner:
    name: str
    source: Source
    connection: str
    queues: tuple[str, ...]
    timeout: Value  # amount None: no timeout at all
    tries: Resolved | None
    once: bool = False
    # False when the timeout is written but cannot be resolved: unknown, never "no timeout".
    timeout_known: bool = True


@dataclass
class Project:
    config: Config
    env: EnvFiles
    jobs: list[JobClass]
    workers: list[ArtisanWorker]
    batches: list[BatchSite]
    batch_table_found: bool
    where: Source  # the project root, for findings about what is missing
    # The real (non-sync) connections the project's runners serve, set once runners are read.
    served: frozenset[str] = frozenset()


def runners(p: Project) -> list[Runner]:
    default = str(p.config.default.value or "sync")
    out: list[Runner] = []
    for w in p.workers:
        if w.command == "horizon":
            continue
        connection = worker_connection(p, w, default)
        queue = p.config.connections.get(connection)
        queues = w.queues or ((queue.queue if queue else "default"),)
        raw = w.options.get("timeout")
        if raw is not None:
            raw = resolve_variable(p, w, raw)
        amount = as_number(raw) if raw is not None else WORKER_TIMEOUT_DEFAULT_S
        timeout = Value(
            f"{w.command} --timeout",
            None if amount == 0 else amount,
            "s",
            w.source if raw is not None else Source(note=f"{w.command} default"),
        )
        tries_raw = w.options.get("tries")
        tries = Resolved(as_number(tries_raw), w.source) if tries_raw is not None else None
        out.append(
            Runner(
                f"{w.platform} {w.name}",
                w.source,
                connection,
                queues,
                timeout,
                tries,
                "once" in w.options,
                # `--timeout=$SOMETHING` nobody sets: unknown, never "no timeout".
                timeout_known=raw is None or amount is not None,
            )
        )
    # Horizon's supervisors run jobs when Horizon runs: when a deployment starts `horizon`,
    # or when none was found to say what runs. Workers found, none of them Horizon: its
    # config is installed but not what works the queues.
    horizon_runs = not p.workers or any(w.command == "horizon" for w in p.workers)
    for s in p.config.supervisors if horizon_runs else []:
        timeout = s.timeout or Value(f"Horizon {s.name} timeout", None, "s", s.source)
        if s.timeout is None:
            p.config.skipped.append(Skipped(str(s.source), (
                f"Horizon {s.environment}.{s.name} timeout cannot be resolved: unknown, so it "
                "was not compared with retry_after, the grace or the jobs")))  # fmt: skip
        out.append(
            Runner(
                f"Horizon {s.environment}.{s.name}",
                s.source,
                s.connection,
                s.queues,
                timeout,
                s.tries,
                timeout_known=s.timeout is not None,
            )
        )
    if not out:
        at = Source(p.where.path, None, "queue:work default; no worker command found")
        queue = p.config.connections.get(default)
        out.append(
            Runner(
                "php artisan queue:work",
                at,
                default,
                (queue.queue if queue else "default",),
                Value("queue:work --timeout", WORKER_TIMEOUT_DEFAULT_S, "s", at),
                None,
            )
        )
    return out


VARIABLE = re.compile(r"^\$[{(]?(\w+)(?::?-([^})]*))?[})]?$")


def resolve_variable(p: Project, w: ArtisanWorker, raw: str) -> str:
    """`${X:-d}` (or a process manager's `$(X:-d)`) as the worker's environment, then the
    project's, sets X, else d; a value that is itself such a variable is resolved in turn (a
    Compose `QUEUE_CONNECTION=${QUEUE_CONNECTION:-database}`). Anything else as written."""
    own = _own_environment(p, w)
    for _ in range(3):
        match = VARIABLE.match(raw)
        if match is None:
            return raw
        entry = own.get(match.group(1)) or p.env.get(match.group(1))
        if entry is not None and entry.value != raw:
            raw = entry.value
        elif match.group(2) is not None:
            return match.group(2)
        else:
            return raw
    return raw


def worker_connection(p: Project, w: ArtisanWorker, default: str) -> str:
    """The connection a worker serves: `queue:work CONNECTION` (a `${QUEUE_CONNECTION:-redis}`
    resolved from the environment), else the default connection as this worker's own
    environment (its Compose service or Kubernetes container) sets it, else the project's."""
    own = _own_environment(p, w)
    if w.connection:
        resolved = resolve_variable(p, w, w.connection)
        return default if VARIABLE.match(resolved) else resolved
    key = p.config.default_key
    if key and key in own and own[key].value:
        return resolve_variable(p, w, own[key].value)
    return resolve_variable(p, w, default)


def _own_environment(p: Project, w: ArtisanWorker) -> dict[str, EnvEntry]:
    if w.platform == "compose":
        label = f"{w.source.path} (service {w.name})"
    elif w.platform == "kubernetes":
        label = f"{w.source.path} (container {w.name.rsplit('/', 1)[-1]})"
    elif w.platform == "app-platform":
        label = f"{w.source.path} (component {w.name})"
    else:
        return {}
    return p.env.files.get(label, {})


def job_connection(p: Project, job: JobClass) -> str:
    return prop_string(job, "connection") or str(p.config.default.value or "sync")


def job_queue(p: Project, job: JobClass) -> str:
    connection = p.config.connections.get(job_connection(p, job))
    return prop_string(job, "queue") or (connection.queue if connection else "default")


def serves(r: Runner, p: Project, job: JobClass) -> bool:
    """A job on a default that reads as `sync` only from the config's fallback or an env
    template is dispatched in production to the one real connection the workers serve (with
    several, which one is unknown)."""
    name = job_connection(p, job)
    deployed = (
        prop_string(job, "connection") is None
        and undeployed_default(p)
        and p.served == {r.connection}
    )
    return (r.connection == name or deployed) and _queue_of(p, job, r.connection) in r.queues


def _queue_of(p: Project, job: JobClass, connection: str) -> str:
    real = p.config.connections.get(connection)
    return prop_string(job, "queue") or (real.queue if real else "default")


def undeployed_default(p: Project) -> bool:
    """The default connection reads as `sync` only from config/queue.php's env() fallback
    (no env source sets it) or from an env template (`.env.example`, the developer's copy):
    not what production runs."""
    default = p.config.default
    if str(default.value) != "sync":
        return False
    key, note, path = p.config.default_key, default.source.note, default.source.path
    fallback = (
        key is not None and note.startswith(f"env('{key}') default") and p.env.get(key) is None
    )
    return fallback or (path is not None and is_template(path))


def is_template(name: str) -> bool:
    base = os.path.basename(name.split(" (")[0]).lower()
    return bool(TEMPLATE_WORDS & set(re.split(r"[._-]+", base)))


def own_timeout(job: JobClass) -> Value | None:
    value = job.props.get("timeout")
    if value is None or not value.known:
        return None
    amount = as_number(value.value)
    if amount is None:
        return None
    return Value(f"{job.name} $timeout", None if amount == 0 else amount, "s", value.source)


def has_deadline(job: JobClass) -> bool:
    return "retryUntil" in job.methods or "retryUntil" in job.props


def is_local(app_env: str) -> bool:
    """APP_ENV values of development and test environments: local, testing-ci, develop."""
    value = app_env.lower()
    # `dusk.local`, `ci-testing`: a test runner's environment, named by any of its words.
    words = re.split(r"[._-]+", value)
    return value in LOCAL_ENVS or any(
        w in LOCAL_ENVS or w.startswith(("test", "dev")) for w in words
    )

"""The platforms' own units around an artisan worker: a Compose service, a Kubernetes
container, a Cloud Foundry app, a RoadRunner service, a systemd unit, a supervisord program.
Each reader finds the worker command in the unit and takes the unit's stop grace, memory limit
and replicas from the platform reader that knows its defaults (readers/)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from tenure.doctor.laravel.worker import ArtisanWorker, Finder, expand_known
from tenure.doctor.model import Skipped, Source, Value
from tenure.doctor.readers import (
    app_platform,
    app_roles,
    cloudfoundry,
    compose,
    kubernetes,
    pm2,
    roadrunner,
    supervisord,
    toolforge,
)
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.ini import read_ini, section_line
from tenure.doctor.readers.systemd import DEFAULT_TIMEOUT_STOP_S
from tenure.doctor.readers.units import UNBOUNDED, seconds, systemd_timespan
from tenure.doctor.readers.worker_command import interpolate, split_command
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, get_path, load_documents
from tenure.doctor.walk import (
    FoundFile,
    Tree,
    read_dotenv,
)


def _yaml(
    path: str,
    content: str,
    env: Mapping[str, str],
    skipped: list[Skipped],
    find: Finder,
    folder: str | None = None,
) -> list[ArtisanWorker]:
    try:
        documents = load_documents(content)
    except YamlProblem as exc:
        skipped.append(Skipped(path, str(exc)))
        return []
    out: list[ArtisanWorker] = []
    for document in documents:
        if compose.is_compose(document) and is_development_compose(document):
            continue
        if compose.is_compose(document):
            out += _compose(path, document, env, skipped, find)
        elif kubernetes.is_manifest(document):
            out += _kubernetes(path, document, find)
        elif cloudfoundry.is_cf_manifest(document):
            out += _cloud_foundry(path, document, env, find)
        elif roadrunner.is_rr_config(document):
            out += _roadrunner(path, document, env, find)
        elif pm2.is_pm2(document):
            out += pm2_workers(pm2.yaml_apps(path, document), find)
        elif toolforge.is_jobs_file(document):
            out += _toolforge(path, document, env, find)
        elif app_platform.is_app_spec(document):
            out += _app_platform(path, document, find)
        elif app_roles.is_role_file(path, document):
            out += _roles(path, document, find, folder)
    return out


def _roles(path: str, document: YMap, find: Finder, folder: str | None) -> list[ArtisanWorker]:
    """A Kamal role's `cmd:` or a heroku.yml process's `command:` that is the worker itself."""
    out = []
    for process in app_roles.role_processes(path, document, folder):
        found = find(process.argv)
        if found is not None:
            worker = ArtisanWorker("kamal" if process.label.startswith("Kamal") else "heroku",
                                   process.label.split()[-1], process.command_at, *found,
                                   process.grace)  # fmt: skip
            worker.unit = process.unit
            out.append(worker)
    return out


def is_known_yaml(content: str, path: str = "") -> bool:
    """Some document of the file is a format a reader understands (a Compose file read and
    found to be development is understood, not unread)."""
    try:
        documents = load_documents(content)
    except YamlProblem:
        return False
    detectors = (compose.is_compose, kubernetes.is_manifest, cloudfoundry.is_cf_manifest,
                 roadrunner.is_rr_config, pm2.is_pm2, toolforge.is_jobs_file,
                 app_platform.is_app_spec)  # fmt: skip
    return any(detect(d) for d in documents for detect in detectors) or any(
        app_roles.is_role_file(path, d) for d in documents
    )


def pm2_workers(apps: Iterable[pm2.App], find: Finder) -> list[ArtisanWorker]:
    out = []
    for app in apps:
        found = find(app.argv)
        if found is not None:
            worker = ArtisanWorker("pm2", app.name, app.command_at, *found, app.grace,
                                   app.instances)  # fmt: skip
            worker.unit = app.unit
            out.append(worker)
    return out


def _roadrunner(
    path: str, document: YMap, env: Mapping[str, str], find: Finder
) -> list[ArtisanWorker]:
    out = []
    for service in roadrunner.services(path, document):
        found = find(_argv(service.command, env))
        if found is not None:
            worker = ArtisanWorker("roadrunner", service.name, service.command_at, *found,
                                   service.grace, service.processes)  # fmt: skip
            worker.unit = service.unit
            out.append(worker)
    return out


def _cloud_foundry(
    path: str, document: YMap, env: Mapping[str, str], find: Finder
) -> list[ArtisanWorker]:
    out = []
    for app in cloudfoundry.apps(path, document):
        found = find(_argv(app.command, env))
        if found is not None:
            worker = ArtisanWorker("cloudfoundry", app.name, app.command_at, *found,
                                   cloudfoundry.grace(), app.instances)  # fmt: skip
            worker.memory_limit, worker.unit = app.memory_limit, app.unit
            out.append(worker)
    return out


def _toolforge(
    path: str, document: list[YMap], env: Mapping[str, str], find: Finder
) -> list[ArtisanWorker]:
    out = []
    for job in toolforge.jobs(path, document):
        found = find(_argv(job.command, env))
        if found is not None:
            worker = ArtisanWorker("toolforge", job.name, job.command_at, *found,
                                   toolforge.grace(), job.replicas)  # fmt: skip
            worker.memory_limit, worker.unit = job.memory_limit, job.unit
            out.append(worker)
    return out


def _app_platform(path: str, document: YMap, find: Finder) -> list[ArtisanWorker]:
    """A component whose run_command starts the worker; its own `envs` (over the app's) are
    its environment (runtime_env.py), its stop grace unknown (no platform_grace)."""
    out = []
    for component in app_platform.components(path, document):
        envs = {k: v for k, (v, _) in component.envs.items()}
        found = find(_argv(component.command, envs))
        if found is not None:
            worker = ArtisanWorker("app-platform", component.name, component.command_at,
                                   *found, None, component.instances)  # fmt: skip
            worker.unit = component.unit
            out.append(worker)
    return out


# Commands only development setups run: a Compose file with one is a development file.
DEVELOPMENT_COMMANDS = ("manage.py runserver", "artisan serve", "flask run", "--reload")


def is_development_compose(document: YMap) -> bool:
    """Misago's docker-compose.yaml runs `manage.py runserver` next to its Celery worker: the
    file is the development setup, whatever its name. So is a Laravel Sail stack (a service
    with LARAVEL_SAIL in its environment, or a `sail-*` image): Sail is Laravel's local
    development environment."""
    for service in document["services"].values():
        if not isinstance(service, YMap):
            continue
        command = service.get("command")
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
        if any(marker in text for marker in DEVELOPMENT_COMMANDS) or _is_sail(service):
            return True
    return False


def _is_sail(service: YMap) -> bool:
    environment = service.get("environment")
    names = (
        list(environment) if isinstance(environment, dict)
        else [str(e).partition("=")[0] for e in environment] if isinstance(environment, list)
        else []
    )  # fmt: skip
    return "LARAVEL_SAIL" in names or str(service.get("image") or "").startswith("sail-")


def _argv(value: Any, env: Mapping[str, str]) -> list[str]:
    if isinstance(value, str):
        return split_command(interpolate(value, env) or value)
    if isinstance(value, list):
        items = [str(item) for item in value if item is not None]
        # `command: ["watchmedo auto-restart -- celery -A app worker"]`: one word holding a
        # whole command line, which only a shell entrypoint runs: read as that line.
        if len(items) == 1 and " " in items[0].strip():
            return split_command(items[0])
        return items
    return []


def _compose(
    path: str, document: YMap, env: Mapping[str, str], skipped: list[Skipped], find: Finder
) -> list[ArtisanWorker]:
    out = []
    for name, service in document["services"].items():
        if not isinstance(service, YMap):
            continue
        found = find(_argv(service.get("entrypoint"), env) + _argv(service.get("command"), env))
        if found is None:
            continue
        result = ReadResult()
        grace = compose._grace(path, service, env, result)  # the Compose reader's own default
        skipped += result.skipped
        replicas = seconds(get_path(service, "deploy", "replicas") or service.get("scale") or 1)
        at = Source(path, service.line_of("command") if "command" in service else service.line)
        worker = ArtisanWorker(
            "compose", name, at, found[0], found[1], found[2], grace, int(replicas or 1)
        )
        worker.memory_limit = compose._memory(path, service, env)
        worker.unit = Source(path, document["services"].line_of(name))
        out.append(worker)
    return out


def _kubernetes(path: str, document: YMap, find: Finder) -> list[ArtisanWorker]:
    spec_path = kubernetes.POD_SPEC_PATHS.get(str(document.get("kind")))
    pod = get_path(document, *spec_path) if spec_path else None
    if not isinstance(pod, YMap):
        return []
    name = str(get_path(document, "metadata", "name") or document.get("kind"))
    replicas = seconds(get_path(document, "spec", "replicas") or 1)
    out = []
    containers = pod.get("containers")
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, YMap):
            continue
        argv = [
            str(v)
            for key in ("command", "args")
            for v in (container.get(key) or [])
            if isinstance(container.get(key), list)
        ]
        found = find(argv)
        if found is None:
            continue
        grace = kubernetes._grace(path, pod, container, ReadResult())
        at = Source(path, container.line_of("args" if "args" in container else "command"))
        worker = ArtisanWorker(
            "kubernetes",
            f"{name}/{container.get('name', '?')}",
            at,
            found[0],
            found[1],
            found[2],
            grace,
            int(replicas or 1),
        )
        worker.memory_limit = kubernetes._memory(path, container)
        worker.unit = Source(path, container.line)
        out.append(worker)
    return out


def _unit_environment(tree: Tree, found: FoundFile, content: str) -> tuple[dict[str, str], str]:
    """A unit's `Environment=` and the `EnvironmentFile=` it names, when the project holds a
    file of that name (Celery's daemonizing guide: /etc/conf.d/celery kept as celery.conf);
    with where they were read."""
    env: dict[str, str] = {}
    where: list[str] = []
    for entry in read_ini(content, backslash_continues=True):
        if entry.section != "Service":
            continue
        if entry.key == "EnvironmentFile":
            read, rel = _environment_file(tree, found, entry.value.strip().lstrip("-"))
            env.update(read)
            where += [rel] if rel else []
        elif entry.key == "Environment":
            for word in split_command(entry.value):
                key, eq, value = word.partition("=")
                if eq:
                    env[key] = value
            where.append(f"{found.rel}:{entry.line}")
    return env, ", ".join(where)


def _environment_file(tree: Tree, unit: FoundFile, target: str) -> tuple[dict[str, str], str]:
    name = os.path.basename(target)
    names = {name, f"{name}.conf", f"{name}.env", f"{os.path.splitext(name)[0]}.conf"}
    folders = {os.path.dirname(unit.path), os.path.dirname(os.path.dirname(unit.path))}
    candidates = [os.path.join(folder, n) for folder in sorted(folders) for n in sorted(names)]
    candidates += [f.path for files in tree.files.values() for f in files
                   if os.path.basename(f.path) in names]  # fmt: skip
    for path in candidates:
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read(256 * 1024)
            except OSError:
                continue
            return read_dotenv(text), os.path.relpath(path, tree.root)
    return {}, ""


def _systemd(
    path: str, content: str, find: Finder, env: Mapping[str, str] | None = None, where: str = ""
) -> list[ArtisanWorker]:
    last = {e.key: e for e in read_ini(content, backslash_continues=True) if e.section == "Service"}
    start = last.get("ExecStart")
    raw = start.value.lstrip("-@+!:") if start else ""
    found = find(split_command(expand_known(raw, env or {}))) if start else None
    if start is None or found is None:
        return []
    written = find(split_command(raw))
    notes = {k: f"from the unit's environment ({where})" for k, v in found[2].items()
             if where and (written is None or written[2].get(k) != v)}  # fmt: skip
    stop = last.get("TimeoutStopSec") or last.get("TimeoutSec")
    grace: Value | None = Value(
        "systemd TimeoutStopSec",
        DEFAULT_TIMEOUT_STOP_S,
        "s",
        Source(note="systemd DefaultTimeoutStopSec"),
    )
    if stop is not None and stop.value:
        amount = systemd_timespan(stop.value)
        grace = (
            None
            if amount is None
            else Value(
                f"systemd {stop.key}",
                None if amount == UNBOUNDED else amount,
                "s",
                Source(path, stop.line),
            )
        )
    return [
        ArtisanWorker(
            "systemd",
            os.path.basename(path),
            Source(path, start.line),
            found[0],
            found[1],
            found[2],
            grace,
            option_notes=notes,
            unit=Source(path, section_line(content, "Service")),
        )
    ]


def _supervisord(path: str, content: str, find: Finder) -> list[ArtisanWorker]:
    programs: dict[str, dict[str, Any]] = {}
    for entry in read_ini(content, backslash_continues=False):
        if entry.section.startswith("program:"):
            programs.setdefault(entry.section[len("program:") :], {})[entry.key] = entry
    out = []
    for name, keys in programs.items():
        command = keys.get("command")
        found = find(split_command(command.value)) if command else None
        if command is None or found is None:
            continue
        out.append(
            ArtisanWorker(
                "supervisord",
                name,
                Source(path, command.line),
                found[0],
                found[1],
                found[2],
                supervisord._grace(path, keys),
                unit=Source(path, section_line(content, f"program:{name}")),
            )
        )
    return out

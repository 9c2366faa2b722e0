"""`php artisan queue:work` and `php artisan horizon` in deployment files, with the platform's
grace around each. The platform readers' own pieces (YAML with lines, INI, grace defaults) are
reused; only the command they look for differs."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tenure.doctor import helm
from tenure.doctor.model import Skipped, Source, Value
from tenure.doctor.readers import cloudfoundry, compose, kubernetes, roadrunner, supervisord
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.ini import read_ini, section_line
from tenure.doctor.readers.procfile import PLATFORM_GRACE_S
from tenure.doctor.readers.systemd import DEFAULT_TIMEOUT_STOP_S
from tenure.doctor.readers.units import UNBOUNDED, seconds, systemd_timespan
from tenure.doctor.readers.worker_command import interpolate, split_command
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, get_path, load_documents
from tenure.doctor.walk import (
    FoundFile,
    Tree,
    decode,
    is_development_name,
    is_foreign_template,
    read_dotenv,
)

COMMANDS = ("queue:work", "queue:listen", "horizon")
FLAGS = {"once", "stop-when-empty", "force", "quiet", "verbose", "no-interaction"}
SEPARATORS = {"&&", "||", ";", "|", "&"}


@dataclass
class ArtisanWorker:
    platform: str  # compose | kubernetes | systemd | supervisord | procfile | script
    name: str
    source: Source
    command: str  # queue:work | queue:listen | horizon
    connection: str | None
    options: dict[str, str] = field(default_factory=dict)
    platform_grace: Value | None = None
    containers: int = 1  # replicas: how many hosts (containers) run it
    memory_limit: Value | None = None  # the container's hard memory limit (MB)
    # Options whose value came from a variable: option -> "where it was read" (say it, never
    # hide it: a default of ${VAR:-300} is the value only while nobody sets VAR).
    option_notes: dict[str, str] = field(default_factory=dict)
    # The unit the platform stops (a Compose service's key line, a container, `[program:x]`,
    # `[Service]`); a script's worker gets its runner's when tie() finds one.
    unit: Source | None = None
    named_for_development: bool = False  # a script's worker whose file name says "local"...

    def stop_site(self) -> Source:
        """Where a finding about this worker's stop grace belongs (CONVENTION.md): the line
        that sets the grace, else the unit's key line, else the command."""
        grace = self.platform_grace
        if grace is not None and grace.source.path:
            return grace.source
        return self.unit or self.source

    @property
    def queues(self) -> tuple[str, ...] | None:
        raw = self.options.get("queue")
        return tuple(q.strip() for q in raw.split(",") if q.strip()) if raw else None


def find_artisan(argv: list[str]) -> tuple[str, str | None, dict[str, str]] | None:
    """(command, connection, options) of the first `artisan queue:work|horizon` in argv."""
    tokens = expand(argv)
    for i, token in enumerate(tokens[:-1]):
        if os.path.basename(token) == "artisan" and tokens[i + 1] in COMMANDS:
            connection, options = _options(tokens[i + 2 :])
            return tokens[i + 1], connection, options
    return None


def expand(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if any(c.isspace() for c in token.strip()):
            try:
                out.extend(expand(shlex.split(token, comments=True)))
            except ValueError:
                out.extend(token.split())
        else:
            out.append(token)
    return out


def _options(tokens: list[str]) -> tuple[str | None, dict[str, str]]:
    connection = None
    options: dict[str, str] = {}
    i = 0
    while i < len(tokens) and tokens[i] not in SEPARATORS:
        token = tokens[i]
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if (
                not eq
                and name not in FLAGS
                and i + 1 < len(tokens)
                and not tokens[i + 1].startswith("-")
            ):
                value = tokens[i + 1]
                i += 1
            options[name] = value
        elif not token.startswith("-") and connection is None:
            connection = token
        i += 1
    return connection, options


Found = tuple[str, str | None, dict[str, str]]
Finder = Callable[[list[str]], Found | None]


def read_workers(
    tree: Tree, scripts: list[tuple[str, str]], find: Finder | None = None, needle: str = "artisan"
) -> tuple[list[ArtisanWorker], list[Skipped]]:
    """Workers from Compose, Kubernetes, systemd, supervisord, Procfile and shell scripts.
    `find` recognises the worker command (artisan's by default; Celery's for --celery), and
    `needle` is a word its files must contain. Files named for development or tests (a
    docker-compose.dev.yml) are not the deployment."""
    find = find or find_artisan
    workers: list[ArtisanWorker] = []
    skipped: list[Skipped] = []
    env_by_dir: dict[str, dict[str, str]] = {}
    for found in tree.files["dotenv"]:
        content = decode(found)
        if isinstance(content, str):
            env_by_dir[os.path.dirname(found.path)] = read_dotenv(content)
    for kind, found, content in _deployment_files(tree, needle):
        if kind == "yaml" and "{{" not in content:
            env = env_by_dir.get(os.path.dirname(found.path), {})
            workers += _yaml(found.rel, content, env, skipped, find)
        elif kind == "systemd":
            workers += _systemd(found.rel, content, find, *_unit_environment(tree, found, content))
        elif kind == "supervisord" and "[program:" in content:
            workers += _supervisord(found.rel, content, find)
        elif kind == "procfile":
            workers += _lines(found.rel, content, "procfile", find, procfile=True)
    for rel, content in scripts:
        found_in = _lines(rel, content, "script", find, procfile=False)
        # A script named like a development one (celery_local.sh) is a deployed worker only
        # when a deployed service runs it: kept until tie() says, then dropped if none does.
        for worker in found_in:
            worker.named_for_development = is_development_name(rel)
        workers += found_in
    return workers, skipped


def deployed(workers: list[ArtisanWorker]) -> list[ArtisanWorker]:
    """Workers without a script named for development that no deployed service runs."""
    return [w for w in workers if not (w.named_for_development and w.platform_grace is None)]


def _in_chart(path: str) -> bool:
    return helm.chart_root(path) is not None  # templates/ or a folder inside it


def _deployment_files(tree: Tree, needle: str) -> Iterator[tuple[str, FoundFile, str]]:
    for kind in ("yaml", "systemd", "supervisord", "procfile"):
        for found in tree.files[kind]:
            if is_development_name(found.rel) or is_foreign_template(
                found.rel, _in_chart(found.path)
            ):
                continue
            content = decode(found)
            if isinstance(content, str) and needle in content:
                yield kind, found, content


def _yaml(
    path: str, content: str, env: Mapping[str, str], skipped: list[Skipped], find: Finder
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


# Commands only development setups run: a Compose file with one is a development file.
DEVELOPMENT_COMMANDS = ("manage.py runserver", "artisan serve", "flask run", "--reload")


def is_development_compose(document: YMap) -> bool:
    """Misago's docker-compose.yaml runs `manage.py runserver` next to its Celery worker: the
    file is the development setup, whatever its name."""
    for service in document["services"].values():
        command = service.get("command") if isinstance(service, YMap) else None
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
        if any(marker in text for marker in DEVELOPMENT_COMMANDS):
            return True
    return False


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


_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def expand_known(text: str, env: Mapping[str, str]) -> str:
    """${X} and $X replaced where `env` has X; the rest left as written."""
    return _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


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


def _json_or_split(command: str) -> list[str]:
    """Dockerfile exec form `CMD ["php", "artisan", ...]`, else shell text."""
    if command.startswith("["):
        try:
            value = json.loads(command)
        except ValueError:
            value = None
        if isinstance(value, list):
            return [str(v) for v in value]
    return split_command(command)


def logical_lines(content: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) with backslash-continued lines joined, as a shell reads them."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(content.splitlines(), start=1):
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending.append(raw.rstrip()[:-1])
            continue
        pending.append(raw)
        yield start, " ".join(part.strip() for part in pending)
        pending = []
    if pending:
        yield start, " ".join(part.strip() for part in pending)


def _process(line: str) -> str:
    """A Dockerfile's `CMD`/`ENTRYPOINT` line, or a script's `exec` line, as a command."""
    for word in ("CMD", "ENTRYPOINT"):
        if line.startswith(word) and line[len(word) : len(word) + 1] in (" ", "["):
            line = line[len(word) :].strip()
    return line.removeprefix("exec ")


_ASSIGNMENT = re.compile(r"""(?:export\s+|local\s+)?([A-Za-z_]\w*)=("[^"`]*"|'[^']*'|[^\s;'"`]*)""")


def _remember(line: str, assigned: dict[str, str]) -> bool:
    """A script's `ARGUMENTS="-A app worker --time-limit=10000 -Q ${queues}"`: remembered, with
    the variables already known expanded, so that a later `celery $ARGUMENTS` is read as the
    command it runs. True when the line is such an assignment."""
    match = _ASSIGNMENT.fullmatch(line.strip())
    if match is None:
        return False
    value = match.group(2)
    if re.search(rf"\$\{{?{match.group(1)}\b", value):
        return True  # X=${X:-0}: the environment's value, defaulted; nothing to fix here
    if value[:1] == "'":
        assigned[match.group(1)] = value[1:-1]
    else:
        assigned[match.group(1)] = expand_known(value.strip('"'), assigned)
    return True


def _lines(
    path: str, content: str, platform: str, find: Finder, *, procfile: bool
) -> list[ArtisanWorker]:
    out = []
    assigned: dict[str, str] = {}  # the script's own VAR="..." lines, in the order they run
    for number, stripped in logical_lines(content):
        if stripped.startswith("#"):
            continue
        if not procfile and _remember(stripped, assigned):
            continue
        name, command = (
            (stripped.partition(":")[0], stripped.partition(":")[2])
            if procfile
            else (os.path.basename(path), expand_known(_process(stripped), assigned))
        )
        found = find(_json_or_split(command.strip()))
        if found is None:
            continue
        grace = (
            Value(
                "Procfile platform shutdown window",
                PLATFORM_GRACE_S,
                "s",
                Source(note="Heroku-style platform, about 30 s"),
            )
            if procfile
            else None
        )
        out.append(
            ArtisanWorker(
                platform, name.strip(), Source(path, number), found[0], found[1], found[2], grace
            )
        )
    return out

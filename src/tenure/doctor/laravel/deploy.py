"""`php artisan queue:work` and `php artisan horizon` in deployment files, with the platform's
grace around each. The platform readers' own pieces (YAML with lines, INI, grace defaults) are
reused; only the command they look for differs. The worker's shape is worker.py's, each
platform's unit units.py's; this module reads the files and the scripts."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

from tenure.doctor import helm
from tenure.doctor.laravel.units import (
    _supervisord,
    _systemd,
    _unit_environment,
    _yaml,
    is_development_compose,
    is_known_yaml,
    pm2_workers,
)
from tenure.doctor.laravel.worker import (
    SEPARATORS,
    ArtisanWorker,
    Finder,
    expand,
    expand_known,
    find_artisan,
)
from tenure.doctor.model import Skipped, Source, Value
from tenure.doctor.readers import pm2
from tenure.doctor.readers.procfile import PLATFORM_GRACE_S
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.walk import (
    FoundFile,
    Tree,
    decode,
    is_development_name,
    is_foreign_template,
    read_dotenv,
)

# Where the tie and the Celery reader have always found these.
__all__ = ["SEPARATORS", "ArtisanWorker", "deployed", "expand", "find_artisan",
           "is_development_compose", "logical_lines", "read_workers"]  # fmt: skip


def read_workers(
    tree: Tree,
    scripts: list[tuple[str, str]],
    find: Finder | None = None,
    needle: str = "artisan",
    *,
    unread: bool = False,
    also: tuple[str, ...] = (),
) -> tuple[list[ArtisanWorker], list[Skipped]]:
    """Workers from Compose, Kubernetes, systemd, supervisord, Procfile and shell scripts.
    `find` recognises the worker command (artisan's by default; Celery's for --celery), and
    `needle` is a word its files must contain. Files named for development or tests (a
    docker-compose.dev.yml) are not the deployment. `unread`: a deployment file no reader
    understands (a process manager's own format) still gives the workers its lines start,
    with no grace: their timeouts are compared, their stop grace is said to be unread.
    `also`: other words that mark a file worth reading (a command that starts the worker)."""
    find = find or find_artisan
    workers: list[ArtisanWorker] = []
    skipped: list[Skipped] = []
    env_by_dir: dict[str, dict[str, str]] = {}
    for found in tree.files["dotenv"]:
        content = decode(found)
        if isinstance(content, str):
            env_by_dir[os.path.dirname(found.path)] = read_dotenv(content)
    for kind, found, content in _deployment_files(tree, (needle, *also)):
        before = len(workers)
        if kind == "yaml" and "{{" not in content:
            env = env_by_dir.get(os.path.dirname(found.path), {})
            workers += _yaml(found.rel, content, env, skipped, find, os.path.dirname(found.path))
        elif kind == "systemd":
            workers += _systemd(found.rel, content, find, *_unit_environment(tree, found, content))
        elif kind == "supervisord" and "[program:" in content:
            workers += _supervisord(found.rel, content, find)
        elif kind == "pm2":
            workers += pm2_workers(pm2.text_apps(found.rel, content), find)
        elif kind == "procfile":
            workers += _lines(found.rel, content, "procfile", find, procfile=True)
        understood = (
            kind == "yaml" and is_known_yaml(content, found.rel)
        ) or "[program:" in content
        if unread and len(workers) == before and kind in UNREAD_KINDS and not understood:
            workers += _unread(found.rel, content, find, needle)
    for rel, content in scripts:
        found_in = _lines(rel, content, "script", find, procfile=False)
        # A script named like a development one (celery_local.sh) is a deployed worker only
        # when a deployed service runs it: kept until tie() says, then dropped if none does.
        for worker in found_in:
            worker.named_for_development = is_development_name(rel)
        workers += found_in
    return workers, skipped


# Kinds whose files may be a format no reader knows (a process manager's .conf, a platform's
# YAML spec); a systemd unit, a Procfile or a pm2 file is always read by its own reader.
UNREAD_KINDS = ("yaml", "supervisord")


def _unread(path: str, content: str, find: Finder, needle: str) -> list[ArtisanWorker]:
    """Each line of a file no reader understood that starts a worker: the command read from
    the word naming `needle` to the end of the line or its closing quote (`command:
    "./artisan queue:listen --timeout=600",` in a process manager's config)."""
    command = re.compile(rf"\S*{re.escape(needle)}\b[^\"'\n]*")
    out = []
    for number, line in logical_lines(content):
        if line.lstrip().startswith("#"):
            continue
        match = command.search(line)
        found = find(split_command(match.group(0))) if match else None
        if found is not None:
            out.append(ArtisanWorker("unread", os.path.basename(path), Source(path, number),
                                     *found))  # fmt: skip
    return out


def deployed(workers: list[ArtisanWorker]) -> list[ArtisanWorker]:
    """Workers without a script named for development that no deployed service runs."""
    return [w for w in workers if not (w.named_for_development and w.platform_grace is None)]


def _in_chart(path: str) -> bool:
    return helm.chart_root(path) is not None  # templates/ or a folder inside it


def _deployment_files(tree: Tree, needles: tuple[str, ...]) -> Iterator[tuple[str, FoundFile, str]]:
    for kind in ("yaml", "systemd", "supervisord", "procfile", "pm2"):
        for found in tree.files[kind]:
            if is_development_name(found.rel) or is_foreign_template(
                found.rel, _in_chart(found.path)
            ):
                continue
            content = decode(found)
            if isinstance(content, str) and any(n in content for n in needles):
                yield kind, found, content


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

"""Is a Compose file, or one service in it, a development setup rather than a deployment?

A reviewer decides from evidence, not from a file's name alone:
- a command only development runs (Django's `runserver`, a server's `--reload`, `flask run`,
  `artisan serve`) anywhere in the file makes the whole file the development stack;
- otherwise a service is development when at least two quieter hints agree: words that say
  development in its name, image tag, build target, env files or environment (`celery-dev`,
  `app:backend-development`, `env.d/development/common`, `DJANGO_CONFIGURATION=Development`);
  the project's source bind-mounted over the image's (`.:/app`, `./src/backend:/app`); DEBUG
  switched on. One hint alone is not enough: a self-hosting file may mount the source for
  easy updates (and restart the worker with watchmedo), or leave DEBUG on.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, load_documents
from tenure.doctor.walk import Tree, decode, is_development_name

# Commands only development setups run: a Compose file with one is a development file.
DEVELOPMENT_COMMAND = re.compile(
    r"\brunserver(?:_plus)?\b|--reload\b|\bflask\s+run\b|\bartisan\s+serve\b"
)
NAME_WORDS = {"dev", "devel", "develop", "development", "test", "testing"}
# "local" says development in an environment value (settings.local) but not in a service's
# name, where it is often a queue's (`celery_worker_local` serves the "local" queue).
DEVELOPMENT_WORDS = NAME_WORDS | {"local"}
# Environment keys whose value names the environment the service runs as.
ENVIRONMENT_KEY = re.compile(r"(?:^|_)(?:ENV|ENVIRONMENT|CONFIGURATION|MODE|STAGE|SETTINGS)\w*$")
DEBUG_KEY = re.compile(r"(?:^|_)DEBUG$")
# `IS_LOCAL_DEV=yes`, `DEVELOPMENT=1`: a switch that says the service runs for development.
# `DEV_ENV=True` too.
DEV_KEY = re.compile(r"(?:^|_)(?:LOCAL_)?DEV(?:ELOPMENT)?(?:_ENV)?$")
ON = {"1", "true", "yes", "on"}
# A folder holding one of these (or .php files) is the project's source; a folder of config
# files that happen to be Python (ldap_config.py) is not.
SOURCE_MARKERS = {"manage.py", "pyproject.toml", "setup.py", "composer.json", "artisan",
                  "__init__.py"}  # fmt: skip


def is_development_compose(document: YMap) -> bool:
    """Misago's docker-compose.yaml runs `manage.py runserver` next to its Celery worker: the
    file is the development setup, whatever its name."""
    services = document.get("services")
    for service in services.values() if isinstance(services, YMap) else []:
        command = service.get("command") if isinstance(service, YMap) else None
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command or "")
        if DEVELOPMENT_COMMAND.search(text):
            return True
    return False


def is_development_service(name: str, service: YMap, folder: str | None) -> bool:
    """Two hints that the service runs a development setup (module docstring); `folder` is
    the Compose file's directory, where its bind mounts' relative paths start."""
    return len(development_hints(name, service, folder)) >= 2


def development_services(services: YMap, folder: str | None) -> set[str]:
    """The development services of one Compose file: by their own hints, and a service that
    builds what a development service builds and mounts the same source over it
    (`celery-worker: <<: *backend` that only changes the backend's environment)."""
    out = {str(n) for n, s in services.items()
           if isinstance(s, YMap) and is_development_service(str(n), s, folder)}  # fmt: skip
    # A service that reads the development environment's env files a development service of
    # the same file reads (`celery` on the production image next to `celery-dev`, both on
    # env.d/development/common) belongs to that development stack.
    shared = {f for n in out for f in _env_files(services[n]) if is_development_name(f)}
    out |= {str(n) for n, s in services.items()
            if isinstance(s, YMap) and _env_files(s) & shared}  # fmt: skip
    builds = [services[n].get("build") for n in out if services[n].get("build") is not None]
    for name, service in services.items():
        if str(name) in out or not isinstance(service, YMap) or service.get("build") is None:
            continue
        if service.get("build") in builds and _same_mounts(service, services, out, folder):
            out.add(str(name))
    return out


def _same_mounts(service: YMap, services: YMap, development: set[str], folder: str | None) -> bool:
    mounted = {h for h in _bind_sources(service) if folder and _is_source(folder, h)}
    return bool(mounted) and any(
        mounted <= set(_bind_sources(services[n])) and services[n].get("build") ==
        service.get("build") for n in development
    )  # fmt: skip


def development_hints(name: str, service: YMap, folder: str | None) -> set[str]:
    hints: set[str] = set()
    if _named(name, service):
        hints.add("named for development")
    environment = _environment(service)
    if any(DEBUG_KEY.search(k) and v.strip().lower() in ON for k, v in environment.items()):
        hints.add("DEBUG on")
    if any(DEV_KEY.search(k.upper()) and v.strip().lower() in ON for k, v in environment.items()):
        hints.add("development switched on")
    if folder is not None and any(_is_source(folder, host) for host in _bind_sources(service)):
        hints.add("source bind-mounted")
    return hints


def _words(text: str) -> set[str]:
    return set(re.split(r"[^a-z0-9]+", text.lower()))


def _named(name: str, service: YMap) -> bool:
    build = service.get("build")
    target = build.get("target") if isinstance(build, YMap) else None
    said = [name, str(service.get("image") or ""), str(target or "")]
    if any(_words(text) & NAME_WORDS for text in said):
        return True
    dockerfile = build.get("dockerfile") if isinstance(build, YMap) else None
    if isinstance(dockerfile, str) and is_development_name(dockerfile):  # Dockerfile.dev
        return True
    values = [v for k, v in _environment(service).items() if ENVIRONMENT_KEY.search(k.upper())]
    if any(_words(text) & DEVELOPMENT_WORDS for text in values):
        return True
    return any(is_development_name(f) for f in _env_files(service))


def _env_files(service: YMap) -> set[str]:
    env_files = service.get("env_file")
    files = env_files if isinstance(env_files, list) else [env_files]
    return {str(item.get("path") if isinstance(item, YMap) else item) for item in files if item}


def _environment(service: YMap) -> dict[str, str]:
    raw = service.get("environment")
    if isinstance(raw, YMap):
        return {str(k): str(v) for k, v in raw.items() if v is not None}
    if isinstance(raw, list):
        return {k: v for k, eq, v in (str(i).partition("=") for i in raw) if eq}
    return {}


def _bind_sources(service: YMap) -> list[str]:
    """The host side of each relative bind mount: `./src:/app`, `{type: bind, source: .}`."""
    out = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            # `${CL_BASE_DIR:-../../}:/opt/app`: the folder the variable defaults to.
            volume = re.sub(r"^\$\{\w+:?-(\.[^}]*)\}", r"\1", volume)
            host = volume.split(":", 1)[0] if ":" in volume else ""
        elif isinstance(volume, YMap) and volume.get("type", "bind") == "bind":
            host = str(volume.get("source") or "")
        else:
            continue
        # `$PWD:/app`: the shell's folder, where `docker compose up` runs beside the file.
        host = re.sub(r"^\$(?:PWD\b|\{PWD\})", ".", host)
        if host.startswith("."):
            out.append(host)
    return out


def _is_source(folder: str, host: str) -> bool:
    path = os.path.normpath(os.path.join(folder, host))
    try:
        names = os.listdir(path)
    except OSError:
        return False  # a file (a config mounted read-only), or nothing there yet
    if any(n in SOURCE_MARKERS or n.endswith(".php") for n in names):
        return True
    # A namespace package (no __init__.py): Python modules, and more of them in subfolders;
    # a folder of config files that happen to be Python has no such tree.
    return any(n.endswith(".py") for n in names) and any(
        _has_python(os.path.join(path, n)) for n in names
    )


def _has_python(folder: str) -> bool:
    try:
        return any(n.endswith(".py") for n in os.listdir(folder))
    except OSError:
        return False  # a file


def _compose_services(tree: Tree, paths: set[str]) -> Iterator[tuple[str, str, YMap, bool]]:
    """(file, folder, services, whole file is development) of each Compose document in `paths`."""
    for found in tree.files["yaml"]:
        content = decode(found) if found.rel in paths else None
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        for document in documents:
            services = document.get("services") if isinstance(document, YMap) else None
            if isinstance(services, YMap):
                folder = os.path.dirname(found.path)
                yield found.rel, folder, services, is_development_compose(document)


def development_units(tree: Tree, paths: set[str]) -> set[tuple[str, int]]:
    """(file, line of the service's name) of every Compose service in the files `paths` names
    that is a development setup: for readers that took the file for a deployment."""
    out: set[tuple[str, int]] = set()
    for rel, folder, services, whole in _compose_services(tree, paths):
        development = development_services(services, folder)
        for name, service in services.items():
            if isinstance(service, YMap) and (whole or str(name) in development):
                out.add((rel, services.line_of(name)))
    return out


def overlay_units(tree: Tree, paths: set[str]) -> dict[tuple[str, int], tuple[str, str]]:
    """Services of an overlay (docker-compose.prod.yaml over docker-compose.yaml) that change
    the command or environment of a service another Compose file of the same folder defines
    (with its `image:` or `build:`) and leave its stop grace alone: the unit the platform
    stops is the base file's (CONVENTION.md). (file, line) -> (folder, service name)."""
    defined: set[tuple[str, str]] = set()
    partial: dict[tuple[str, int], tuple[str, str]] = {}
    for rel, _, services, _ in _compose_services(tree, paths):
        for name, service in services.items():
            if not isinstance(service, YMap):
                continue
            if "image" in service or "build" in service:
                defined.add((os.path.dirname(rel), str(name)))
            elif "stop_grace_period" not in service:
                partial[(rel, services.line_of(name))] = (os.path.dirname(rel), str(name))
    return {unit: key for unit, key in partial.items() if key in defined}

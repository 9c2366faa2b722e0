"""Container platforms whose deployment file names a command per process type: Kamal's
`config/deploy.yml` (and its destinations, `deploy.staging.yml`) with one container per role
under `servers:`, and Heroku's `heroku.yml` with one dyno type per `run:` entry.

Kamal stops a role's old container with `docker stop -t T`, where T is the role's
`stop_timeout`, else the file's, else for a role without kamal-proxy (a worker role: not the
primary role, no `proxy:`) the `drain_timeout` (default 30 s); a proxied role gets Docker's
10 s (lib/kamal/configuration/role.rb, stop_args). Heroku sends SIGTERM to every process of a
dyno and SIGKILL 30 s later, as for a Procfile process.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import seconds
from tenure.doctor.readers.worker_command import split_command
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, load_documents

KAMAL_DRAIN_S = 30.0
DOCKER_STOP_S = 10.0
HEROKU_GRACE_S = 30.0
_KAMAL_NAME = re.compile(r"deploy(?:\.[\w-]+)?\.ya?ml")


@dataclass(frozen=True)
class RoleProcess:
    """One process type: what it runs, the platform's grace around it, where it is defined."""

    label: str
    argv: list[str]
    grace: Value
    unit: Source  # the role's or process's key line
    command_at: Source
    image: str | None = None
    env: dict[str, tuple[str, str]] = field(default_factory=dict)


def is_role_file(path: str, document: object) -> bool:
    return is_kamal(path, document) or is_heroku_yml(path, document)


def is_kamal(path: str, document: object) -> bool:
    """A Kamal configuration: named deploy*.yml, with `servers:` and none of Compose's or
    Kubernetes' keys."""
    return (
        _KAMAL_NAME.fullmatch(os.path.basename(path)) is not None
        and isinstance(document, YMap)
        and isinstance(document.get("servers"), YMap | list)
        and not {"services", "apiVersion", "kind"} & set(document)
    )


def is_heroku_yml(path: str, document: object) -> bool:
    return (
        os.path.basename(path) == "heroku.yml"
        and isinstance(document, YMap)
        and isinstance(document.get("run"), YMap)
    )


def role_processes(path: str, document: YMap, folder: str | None = None) -> list[RoleProcess]:
    """`folder`: where the file is on disk, so a Kamal destination file is read over the
    deploy.yml next to it."""
    if is_heroku_yml(path, document):
        return _heroku(path, document)
    if not is_kamal(path, document):
        return []
    base = _base(folder) if folder and os.path.basename(path) not in BASE_NAMES else None
    return _kamal(path, document, base)


BASE_NAMES = ("deploy.yml", "deploy.yaml")


def _base(folder: str) -> YMap | None:
    for name in BASE_NAMES:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                documents = load_documents(handle.read(256 * 1024))
        except (OSError, YamlProblem):
            continue
        return next((d for d in documents if isinstance(d, YMap)), None)
    return None


def _heroku(path: str, document: YMap) -> list[RoleProcess]:
    grace = Value("Heroku dyno shutdown window", HEROKU_GRACE_S, "s",
                  Source(note="Heroku: SIGTERM, then SIGKILL 30 s later"))  # fmt: skip
    run = document["run"]
    out = []
    for name, entry in run.items():
        command = entry.get("command") if isinstance(entry, YMap) else entry
        image = entry.get("image") if isinstance(entry, YMap) else None
        argv = _argv(command)
        if argv:
            at = Source(path, run.line_of(name))
            out.append(RoleProcess(f"heroku.yml process {name}", argv, grace, at, at,
                                   str(image) if image else None))  # fmt: skip
    return out


def _kamal(path: str, document: YMap, base: YMap | None) -> list[RoleProcess]:
    servers = document["servers"]
    if not isinstance(servers, YMap):
        return []  # a plain list of hosts: the web role, running the image's own command
    primary = str(_setting(document, base, "primary_role") or "web")
    image = _setting(document, base, "image")
    env = _clear_env(path, _setting(document, base, "env"))
    out = []
    for name, role in servers.items():
        if not isinstance(role, YMap) or not isinstance(role.get("cmd"), str):
            continue
        proxied = bool(role.get("proxy")) if name != primary else role.get("proxy") is not False
        grace = _kamal_grace(path, document, base, role, proxied)
        unit = Source(path, servers.line_of(name))
        out.append(RoleProcess(
            f"Kamal role {name}", split_command(role["cmd"]), grace, unit,
            Source(path, role.line_of("cmd")), str(image) if image else None,
            {**env, **_clear_env(path, role.get("env"))}))  # fmt: skip
    return out


def _kamal_grace(path: str, document: YMap, base: YMap | None, role: YMap, proxied: bool) -> Value:
    for holder, where in ((role, path), (document, path), (base, "config/deploy.yml")):
        if isinstance(holder, YMap) and seconds(holder.get("stop_timeout")) is not None:
            amount = seconds(holder["stop_timeout"])
            return Value("Kamal stop_timeout", amount, "s",
                         Source(where, holder.line_of("stop_timeout")))  # fmt: skip
    if proxied:
        behind = Source(note="Kamal role behind kamal-proxy: Docker's default 10 s")
        return Value("docker stop timeout", DOCKER_STOP_S, "s", behind)
    for holder, where in ((document, path), (base, "config/deploy.yml")):
        if isinstance(holder, YMap) and seconds(holder.get("drain_timeout")) is not None:
            return Value("Kamal drain_timeout", seconds(holder["drain_timeout"]), "s",
                         Source(where, holder.line_of("drain_timeout")))  # fmt: skip
    return Value("Kamal drain_timeout", KAMAL_DRAIN_S, "s",
                 Source(note="Kamal default drain_timeout, 30 s"))  # fmt: skip


def _setting(document: YMap, base: YMap | None, key: str) -> object:
    """A destination file (deploy.staging.yml) is merged over deploy.yml by Kamal."""
    if key in document:
        return document[key]
    return base.get(key) if isinstance(base, YMap) else None


def _clear_env(path: str, env: object) -> dict[str, tuple[str, str]]:
    """`env: {clear: {K: v}}` (or a plain map of K: v, Kamal 1's form)."""
    if not isinstance(env, YMap):
        return {}
    clear = env.get("clear") if "clear" in env or "secret" in env else env
    if not isinstance(clear, YMap):
        return {}
    return {str(k): (str(v), f"{path}, env") for k, v in clear.items()
            if v is not None and not isinstance(v, dict | list)}  # fmt: skip


def _argv(command: object) -> list[str]:
    if isinstance(command, str):
        return split_command(command)
    if isinstance(command, list):
        return split_command(" ".join(str(c) for c in command if c is not None))
    return []

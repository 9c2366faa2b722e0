"""Dockerfiles: the files they copy into the image, and the ENV they set.

Projects keep what runs inside the image in folders the tree walk passes over
(`.github/docker/supervisord.conf`, copied by Pterodactyl's Dockerfile to /etc/supervisord.conf):
a file a Dockerfile COPYs is part of the deployment wherever it lives.
"""

from __future__ import annotations

import glob
import os
import shlex
from dataclasses import dataclass

from tenure.doctor.model import Source


@dataclass(frozen=True)
class EnvSetting:
    key: str
    value: str
    source: Source


def instructions(text: str) -> list[tuple[int, str, str]]:
    """(line, INSTRUCTION, arguments) with backslash continuations joined, comments dropped."""
    out: list[tuple[int, str, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending:
            if not stripped or stripped.startswith("#"):
                continue
            start = number
        elif stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        joined = " ".join(p.strip() for p in pending)
        pending = []
        word, _, rest = joined.partition(" ")
        out.append((start, word.upper(), rest.strip()))
    return out


def copied_sources(text: str) -> list[str]:
    """The local sources of COPY and ADD (not `--from=` stages, not URLs), as written; a `*`
    in the last part stays a pattern (copied_files expands it)."""
    out: list[str] = []
    for _, word, rest in instructions(text):
        if word not in ("COPY", "ADD"):
            continue
        try:
            parts = shlex.split(rest)
        except ValueError:
            continue
        if any(p.startswith("--from") for p in parts):
            continue
        paths = [p for p in parts if not p.startswith("--")]
        out += [p for p in paths[:-1] if "://" not in p and _plain(p)]
    return out


def _plain(source: str) -> bool:
    """A path, or a folder's files by `*` in its last part (`COPY ./docker/* /`); other
    patterns and variables are not followed."""
    folder, name = os.path.split(source)
    return not any(c in folder for c in "*?$[") and not any(c in name for c in "?$[")


def renamed_files(root: str, dockerfile: str, text: str) -> dict[str, str]:
    """Where the image keeps each single file it copies under a path of its own:
    `COPY ./compose/production/django/celery/worker/start /start-celeryworker` gives
    {"/start-celeryworker": "compose/production/django/celery/worker/start"} (paths relative
    to the project root). A service's `command: /start-celeryworker` names that file, and
    `/start` another one, whatever the two files are called in the project."""
    out: dict[str, str] = {}
    for _, word, rest in instructions(text):
        if word not in ("COPY", "ADD"):
            continue
        try:
            parts = [p for p in shlex.split(rest) if not p.startswith("--")]
        except ValueError:
            continue
        if len(parts) != 2 or "://" in parts[0] or not _plain(parts[0]) or "*" in parts[0]:
            continue
        source, target = parts
        if not target.startswith("/"):
            continue  # relative to a WORKDIR: not a name a command is seen to use
        for context in (root, os.path.dirname(dockerfile)):
            path = os.path.normpath(os.path.join(context, source))
            if path.startswith(root + os.sep) and os.path.isfile(path):
                if target.endswith("/"):
                    target += os.path.basename(path)
                out[os.path.normpath(target)] = os.path.relpath(path, root)
                break
    return out


def copied_files(root: str, dockerfile: str, text: str) -> list[str]:
    """Absolute paths of the regular files the Dockerfile copies, with the build context taken
    as the project root or the Dockerfile's own folder (whichever holds the source)."""
    found: list[str] = []
    for source in copied_sources(text):
        for context in (root, os.path.dirname(dockerfile)):
            path = os.path.normpath(os.path.join(context, source))
            if not path.startswith(root + os.sep):
                continue
            if "*" in os.path.basename(path):  # `COPY ./docker/* /`: every file it matches
                matched = sorted(p for p in glob.glob(path) if os.path.isfile(p))
                found += matched
                if matched:
                    break
            elif os.path.isfile(path):
                found.append(path)
                break
    return found


def env_settings(rel: str, text: str) -> list[EnvSetting]:
    """`ENV KEY=value ...` and the old `ENV KEY value` form."""
    out: list[EnvSetting] = []
    for number, word, rest in instructions(text):
        if word != "ENV":
            continue
        try:
            parts = shlex.split(rest)
        except ValueError:
            continue
        if parts and "=" not in parts[0]:
            out.append(EnvSetting(parts[0], " ".join(parts[1:]), Source(rel, number)))
            continue
        for part in parts:
            key, eq, value = part.partition("=")
            if eq:
                out.append(EnvSetting(key, value, Source(rel, number, f"ENV {key}={value}")))
    return out


def image_stem(name: str) -> str:
    """`ghcr.io/owner/App_Backend` -> `app-backend`: the folder an image is named after."""
    return name.lower().rsplit("/", 1)[-1].replace("_", "-")


def named_images(root: str, scripts: dict[str, str]) -> dict[str, str]:
    """The project's own image published under its folder's name (`ghcr.io/owner/app-backend`
    built from `app_backend/Dockerfile`, `owner/app` from the root Dockerfile of `app/`):
    folder name -> the plain `Dockerfile` there, when one folder alone has that name."""
    claims: dict[str, list[str]] = {}
    for path in scripts:
        if os.path.basename(path) == "Dockerfile":
            folder = os.path.dirname(path) or os.path.basename(os.path.abspath(root))
            claims.setdefault(image_stem(os.path.basename(folder)), []).append(path)
    return {stem: paths[0] for stem, paths in claims.items() if len(paths) == 1}

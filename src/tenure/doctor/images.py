"""Which image a runner runs and which Dockerfile builds it: a Compose `build:`'s Dockerfile,
an image's name without tag or digest, and the Dockerfile an image published under a
repository's name comes from (its `LABEL org.opencontainers.image.source`, or the repository it
clones)."""

from __future__ import annotations

import os
import re

from tenure.doctor.dockerfile import instructions
from tenure.doctor.walk import is_dockerfile


def built_dockerfile(compose_path: str, build: object) -> str | None:
    """The Dockerfile a Compose `build:` names, relative to the project root."""
    if isinstance(build, str):
        context, name = build, "Dockerfile"
    elif isinstance(build, dict):  # YMap is a dict
        context = str(build.get("context", "."))
        name = str(build.get("dockerfile", "Dockerfile"))
    else:
        return None
    # `dockerfile: ./docker/backend/${TARGET:-Dockerfile}`: the file built when TARGET is unset.
    context, name = _default(context), _default(name)
    if "://" in context or "$" in context or "$" in name:
        return None
    folder = os.path.dirname(compose_path)
    return os.path.normpath(os.path.join(folder, context, name))


_DEFAULTED = re.compile(r"\$\{\w+:?-([^}$]*)\}")


def _default(text: str) -> str:
    return _DEFAULTED.sub(lambda m: m.group(1), text)


SOURCE_LABEL = re.compile(
    r"org\.opencontainers\.image\.(?:source|url)\s*=\s*[\"']?https?://[^/\s\"']+/"
    r"([\w.-]+/[\w.-]+?)(?:\.git)?/?[\"'\s]"
)


def labelled_images(scripts: dict[str, str]) -> dict[str, str]:
    """owner/name -> the Dockerfile whose `LABEL org.opencontainers.image.source` names that
    repository: the image published from it (`ghcr.io/owner/name:latest`) is that Dockerfile's
    image, though no Compose service builds it. When several Dockerfiles claim it (Dockerfile
    and Dockerfile-legacy), the plain, shallowest `Dockerfile` is the published one; without
    such a one, none is taken."""
    claims: dict[str, list[str]] = {}
    for path, text in scripts.items():
        if not is_dockerfile(os.path.basename(path)):
            continue
        for _, word, rest in instructions(text):
            if word == "LABEL":
                for match in SOURCE_LABEL.finditer(rest + " "):
                    claims.setdefault(match.group(1).lower(), []).append(path)
            elif word in ("ARG", "ENV"):
                repo = _cloned_repository(rest, text)
                if repo is not None:
                    claims.setdefault(repo, []).append(path)
    out: dict[str, str] = {}
    for repo, paths in claims.items():
        ranked = sorted(set(paths), key=_plainness)
        if len(ranked) == 1 or _plainness(ranked[0]) < _plainness(ranked[1]):
            out[repo] = ranked[0]
    return out


REPOSITORY_ARG = re.compile(
    r"^(\w+)=[\"']?https?://[^/\s\"']+/([\w.-]+/[\w.-]+?)(?:\.git)?/?[\"']?$"
)


def _cloned_repository(assignment: str, text: str) -> str | None:
    """`ARG REPO_URL=https://github.com/owner/name` that the Dockerfile then `git clone`s: the
    image is built from that repository, so it is the one published under its name."""
    match = REPOSITORY_ARG.match(assignment.strip())
    if match is None:
        return None
    name = match.group(1)
    cloned = re.search(r"git\s+clone\b[^\n]*\$\{?" + name + r"\b", text)
    return match.group(2).lower() if cloned else None


def _plainness(path: str) -> tuple[int, bool]:
    return path.count("/"), os.path.basename(path) != "Dockerfile"


def image_repository(image: str) -> str:
    """`ghcr.io/owner/name` -> `owner/name`: an image's last two path parts, lowercased."""
    return "/".join(image.lower().split("/")[-2:])


def image_name(value: object) -> str | None:
    """`registry.example/shop/app:1.2@sha256:...` -> `registry.example/shop/app`; a registry
    left to a variable (`${REGISTRY_URL:-docker.io}/owner/app`) is dropped; a name made of
    variables only is no name."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = VARIABLE_REGISTRY.sub("", value.strip()).split("@", 1)[0]
    if name.startswith("$"):
        return None
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: len(name) - len(last[-1])] + last[-1].split(":", 1)[0]
    return name


VARIABLE_REGISTRY = re.compile(r"^\$\{[^}/]*\}/(?=[\w.-]+/[\w.-]+)")

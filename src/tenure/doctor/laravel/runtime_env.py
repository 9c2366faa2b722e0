"""The environment a deployment gives the application, which Laravel lets win over every .env
file (real environment variables are never overwritten by dotenv): Compose `environment:` and
`env_file:`, and Dockerfile `ENV`. Each becomes an env source ranked before the .env files."""

from __future__ import annotations

import os

from tenure.doctor.dockerfile import env_settings
from tenure.doctor.laravel.php import EnvEntry, read_env
from tenure.doctor.model import Source
from tenure.doctor.readers import compose
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, load_documents
from tenure.doctor.walk import Tree, decode, is_development_name, is_foreign_template

Sources = list[tuple[str, dict[str, EnvEntry]]]


def compose_environments(tree: Tree, base: str) -> Sources:
    """One source per Compose service that sets an environment (`environment:` map or list,
    then its `env_file:` files, which `environment:` overrides)."""
    out: Sources = []
    for found in tree.files["yaml"]:
        if is_development_name(found.rel) or is_foreign_template(found.rel):
            continue
        if b"environment" not in found.data and b"env_file" not in found.data:
            continue
        content = decode(found)
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        for document in documents:
            if not compose.is_compose(document):
                continue
            for name, service in document["services"].items():
                if not isinstance(service, YMap):
                    continue
                entries = _env_files(service, found.path, base)
                entries.update(_environment(service, found.rel))
                if entries:
                    out.append((f"{found.rel} (service {name})", entries))
    return out


def _environment(service: YMap, rel: str) -> dict[str, EnvEntry]:
    raw = service.get("environment")
    out: dict[str, EnvEntry] = {}
    if isinstance(raw, YMap):
        for key, value in raw.items():
            if value is not None and not isinstance(value, dict | list):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                out[key] = EnvEntry(text, Source(rel, raw.line_of(key), f"{key}={text}"))
    elif isinstance(raw, list):
        line = getattr(raw, "line", 0) or service.line_of("environment")
        for item in raw:
            key, eq, value = str(item).partition("=")
            if eq:
                out[key] = EnvEntry(value, Source(rel, line, f"{key}={value}"))
    return out


def _env_files(service: YMap, compose_path: str, base: str) -> dict[str, EnvEntry]:
    raw = service.get("env_file")
    names = [raw] if isinstance(raw, str) else [e for e in raw or [] if isinstance(e, str)]
    out: dict[str, EnvEntry] = {}
    for name in names:
        path = os.path.normpath(os.path.join(os.path.dirname(compose_path), name))
        try:
            with open(path, encoding="utf-8-sig", errors="replace") as handle:
                out.update(read_env(handle.read(1024 * 1024), os.path.relpath(path, base)))
        except OSError:
            continue
    return out


def dockerfile_environments(dockerfiles: list[tuple[str, str]]) -> Sources:
    """`ENV KEY=value` of each Dockerfile (rel, text), one source each."""
    out: Sources = []
    for rel, text in dockerfiles:
        if is_development_name(rel):
            continue
        entries = {e.key: EnvEntry(e.value, e.source) for e in env_settings(rel, text)}
        if entries:
            out.append((rel, entries))
    return out

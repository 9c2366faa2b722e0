"""The environment a deployment gives the application, which Laravel lets win over every .env
file (real environment variables are never overwritten by dotenv): Compose `environment:` and
`env_file:`, Kubernetes containers' `env:` and the ConfigMaps their `envFrom:` names, and
Dockerfile `ENV`. Each becomes an env source ranked before the .env files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace

from tenure.doctor.dockerfile import env_settings
from tenure.doctor.laravel.php import EnvEntry, read_env
from tenure.doctor.model import Source
from tenure.doctor.readers import app_platform, compose, kubernetes
from tenure.doctor.readers.development import is_development_compose, is_development_service
from tenure.doctor.readers.worker_command import interpolate
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, get_path, load_documents
from tenure.doctor.walk import Tree, decode, is_development_name, is_foreign_template, read_dotenv

Sources = list[tuple[str, dict[str, EnvEntry]]]


def compose_environments(tree: Tree, base: str) -> Sources:
    """One source per Compose service that sets an environment (`environment:` map or list,
    then its `env_file:` files, which `environment:` overrides), and one per Kubernetes
    container (its ConfigMaps from `envFrom:`, then its own `env:`)."""
    out: Sources = []
    documents = list(_documents(tree))
    config_maps = {
        str(get_path(d, "metadata", "name")): (rel, d)
        for rel, d in documents
        if d.get("kind") == "ConfigMap" and isinstance(d.get("data"), YMap)
    }
    dotenvs = {os.path.dirname(f.rel): f for f in tree.files["dotenv"]}
    for rel, document in documents:
        if compose.is_compose(document):
            # Compose interpolates `${X:-d}` in values from the .env beside the file.
            dotenv = dotenvs.get(os.path.dirname(rel))
            text = decode(dotenv) if dotenv is not None else ""
            beside = read_dotenv(text) if isinstance(text, str) else {}
            whole = is_development_compose(document)
            folder = os.path.dirname(os.path.join(tree.root, rel))
            for name, service in document["services"].items():
                # A development service's environment (a browser-test runner's
                # APP_ENV=dusk.local) is not what production runs with.
                if (
                    not isinstance(service, YMap)
                    or whole
                    or is_development_service(str(name), service, folder)
                ):
                    continue
                entries = _env_files(service, os.path.join(tree.root, rel), base)
                entries.update(_environment(service, rel, beside))
                if entries:
                    out.append((f"{rel} (service {name})", entries))
        elif kubernetes.is_manifest(document):
            out += _pod_environments(rel, document, config_maps)
        elif app_platform.is_app_spec(document):
            out += _component_environments(rel, document)
    return out


def _documents(tree: Tree) -> Iterator[tuple[str, YMap]]:
    for found in tree.files["yaml"]:
        if is_development_name(found.rel) or is_foreign_template(found.rel):
            continue
        words = (b"environment", b"env_file", b"env:", b"ConfigMap", b"envFrom", b"envs:")
        if not any(word in found.data for word in words):
            continue
        content = decode(found)
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        yield from ((found.rel, d) for d in documents if isinstance(d, YMap))


def _component_environments(rel: str, document: YMap) -> Sources:
    """One source per App Platform component: the app's `envs`, then the component's own."""
    return [
        (f"{rel} (component {c.name})",
         {k: EnvEntry(v, replace(at, note=f"{k}={v}")) for k, (v, at) in c.envs.items()})
        for c in app_platform.components(rel, document)
        if c.envs
    ]  # fmt: skip


def _pod_environments(
    rel: str, document: YMap, config_maps: dict[str, tuple[str, YMap]]
) -> Sources:
    spec_path = kubernetes.POD_SPEC_PATHS.get(str(document.get("kind")))
    pod = get_path(document, *spec_path) if spec_path else None
    containers = pod.get("containers") if isinstance(pod, YMap) else None
    out: Sources = []
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, YMap):
            continue
        entries: dict[str, EnvEntry] = {}
        for source in container.get("envFrom") or []:
            name = get_path(source, "configMapRef", "name") if isinstance(source, YMap) else None
            if name is not None and str(name) in config_maps:
                map_rel, config_map = config_maps[str(name)]
                data = config_map["data"]
                entries.update({str(k): EnvEntry(str(v), Source(map_rel, data.line_of(k),
                                                                 f"{k}={v}"))
                                for k, v in data.items() if v is not None})  # fmt: skip
        for item in container.get("env") or []:
            if isinstance(item, YMap) and "name" in item and "value" in item:
                key, value = str(item["name"]), str(item["value"])
                entries[key] = EnvEntry(value, Source(rel, item.line_of("value"), f"{key}={value}"))
        if entries:
            label = f"{rel} (container {container.get('name', '?')})"
            out.append((label, entries))
    return out


def _environment(service: YMap, rel: str, beside: dict[str, str]) -> dict[str, EnvEntry]:
    raw = service.get("environment")
    out: dict[str, EnvEntry] = {}
    if isinstance(raw, YMap):
        for key, value in raw.items():
            if value is not None and not isinstance(value, dict | list):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                text = interpolate(text, beside) or text
                out[key] = EnvEntry(text, Source(rel, raw.line_of(key), f"{key}={text}"))
    elif isinstance(raw, list):
        line = getattr(raw, "line", 0) or service.line_of("environment")
        lines = getattr(raw, "item_lines", None) or [line] * len(raw)
        for item, at in zip(raw, lines, strict=False):
            key, eq, value = str(item).partition("=")
            if eq:
                value = interpolate(value, beside) or value
                out[key] = EnvEntry(value, Source(rel, at, f"{key}={value}"))
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

"""Amazon ECS container definitions written in YAML: a Pulumi stack config
(`task_definitions: {celery: {container_definitions: [...]}}`), or any other file that lists
containers under `container_definitions` / `containerDefinitions` / `ContainerDefinitions`.

ECS stops a task's container with SIGTERM, then SIGKILLs it `stopTimeout` seconds later. When
the container leaves it unset: 30 s on Fargate; on EC2 the container agent's
`ECS_CONTAINER_STOP_TIMEOUT`, itself 30 s by default (AWS ContainerDefinition.stopTimeout).
A task definition is a cloud deployment whatever its file is called (a `config.dev.yaml` stack
runs in AWS, not on a laptop), so these are read also from files named for development.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from tenure.doctor.model import Source, Value
from tenure.doctor.readers.units import seconds
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, load_documents
from tenure.doctor.walk import Tree, decode

DEFAULT_STOP_TIMEOUT_S = 30.0
_CONTAINERS = re.compile(r"^container_?definitions$", re.IGNORECASE)


@dataclass
class EcsContainer:
    label: str
    argv: list[str]
    own_entrypoint: bool
    own_command: bool
    image: str | None
    grace: Value | None
    unit: Source
    env: dict[str, tuple[str, str]] = field(default_factory=dict)


def ecs_containers(tree: Tree) -> Iterator[EcsContainer]:
    for found in tree.files["yaml"]:
        if b"efinitions" not in found.data:
            continue
        content = decode(found)
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        for document in documents:
            yield from _walk(found.rel, document, 0)


def _walk(path: str, node: object, depth: int) -> Iterator[EcsContainer]:
    if depth > 12:
        return
    if isinstance(node, YMap):
        for key, value in node.items():
            if _CONTAINERS.match(str(key)):
                yield from _containers(path, value)
            else:
                yield from _walk(path, value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(path, item, depth + 1)


def _containers(path: str, value: object) -> Iterator[EcsContainer]:
    """A list of containers, or a mapping of name -> container (Pulumi's tb_pulumi)."""
    named: list[tuple[str | None, object, int]]
    if isinstance(value, list):
        named = [(None, item, item.line if isinstance(item, YMap) else 0) for item in value]
    elif isinstance(value, YMap):
        named = [(str(k), v, value.line_of(str(k))) for k, v in value.items()]
    else:
        return
    for name, container, line in named:
        if isinstance(container, YMap) and _get(container, "image") is not None:
            yield _container(path, container, name, line)


def _container(path: str, container: YMap, name: str | None, line: int) -> EcsContainer:
    label = name or str(_get(container, "name") or "?")
    stop_key = next((k for k in container if k.lower() == "stoptimeout"), None)
    amount = seconds(str(container[stop_key])) if stop_key is not None else None
    grace: Value | None = Value("ECS stopTimeout", DEFAULT_STOP_TIMEOUT_S, "s",
                                Source(note="ECS default when stopTimeout is unset"))  # fmt: skip
    if stop_key is not None:  # unreadable (a Pulumi output, a variable): unknown
        at = Source(path, container.line_of(stop_key))
        grace = None if amount is None else Value("ECS stopTimeout", amount, "s", at)
    entrypoint, command = _get(container, "entryPoint"), _get(container, "command")
    image = _get(container, "image")
    return EcsContainer(
        f"ECS container {label}", _words(entrypoint) + _words(command),
        entrypoint is not None, command is not None, str(image) if image else None,
        grace, Source(path, line), _environment(path, label, _get(container, "environment")),
    )  # fmt: skip


def _get(container: YMap, key: str) -> object:
    """ECS's camelCase, CloudFormation's PascalCase, or a snake_case spelling of it."""
    wanted = key.lower()
    return next((v for k, v in container.items() if k.lower().replace("_", "") == wanted), None)


def _words(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return str(value).split() if isinstance(value, str) else []


def _environment(path: str, label: str, raw: object) -> dict[str, tuple[str, str]]:
    where = f"{path}, ECS container {label}"
    items = [i for i in raw if isinstance(i, YMap)] if isinstance(raw, list) else []
    return {
        str(_get(i, "name")): (str(_get(i, "value")), where)
        for i in items
        if _get(i, "name") is not None and _get(i, "value") is not None
    }

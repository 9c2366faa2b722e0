"""Deployment readers: each turns one kind of file into Launches, and says what it skipped."""

from __future__ import annotations

import os

from tenure.doctor.model import Skipped
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.compose import is_compose, read_compose
from tenure.doctor.readers.kubernetes import is_manifest, read_manifest
from tenure.doctor.readers.procfile import read_procfile
from tenure.doctor.readers.supervisord import looks_like_supervisord, read_supervisord
from tenure.doctor.readers.systemd import read_unit
from tenure.doctor.readers.yamlnodes import YamlProblem, load_documents
from tenure.doctor.walk import Tree, decode, read_dotenv


def read_deployments(tree: Tree) -> ReadResult:
    """Every worker launch found in the tree's deployment files."""
    result = ReadResult()
    env_by_dir: dict[str, dict[str, str]] = {}
    for found in tree.files["dotenv"]:
        text = decode(found)
        if isinstance(text, str):
            env_by_dir[os.path.dirname(found.path)] = read_dotenv(text)
    for found in tree.files["yaml"]:
        text = decode(found)
        if isinstance(text, Skipped):
            result.skipped.append(text)
            continue
        env = env_by_dir.get(os.path.dirname(found.path), {})
        result.extend(_read_yaml(found.rel, text, env))
    for kind, reader in (("systemd", read_unit), ("procfile", read_procfile)):
        for found in tree.files[kind]:
            text = decode(found)
            result.extend(reader(found.rel, text) if isinstance(text, str) else _skip(text))
    for found in tree.files["supervisord"]:
        text = decode(found)
        if isinstance(text, Skipped):
            result.skipped.append(text)
        elif looks_like_supervisord(text):
            result.extend(read_supervisord(found.rel, text))
    return result


def _skip(skipped: Skipped) -> ReadResult:
    return ReadResult(skipped=[skipped])


def _read_yaml(path: str, text: str, env: dict[str, str]) -> ReadResult:
    # Cheap test first: most YAML in a tree (CI, i18n, OpenAPI) is neither kind, and parsing
    # 500 of them for nothing is most of the doctor's time on a big tree.
    if "services" not in text and "apiVersion" not in text:
        return _skip(Skipped(path, "not a Compose file or Kubernetes manifest"))
    if "{{" in text:
        return _skip(
            Skipped(path, "a template ({{ ... }}): render it and run doctor on the output")
        )
    try:
        documents = load_documents(text)
    except YamlProblem as exc:
        return _skip(Skipped(path, str(exc)))
    result = ReadResult()
    for document in documents:
        if is_compose(document):
            result.extend(read_compose(path, document, env))
        elif is_manifest(document):
            result.extend(read_manifest(path, document))
    if not result.understood:
        result.skipped.append(Skipped(path, "not a Compose file or Kubernetes manifest"))
    return result

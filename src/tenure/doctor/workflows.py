"""Images a project's GitHub Actions workflows build and publish: which Dockerfile is behind
`image: investbrainapp/investbrain:latest` when no Compose service builds it.

A `docker/build-push-action` step names the Dockerfile (`file:`, else `<context>/Dockerfile`)
and the tags it pushes, often through another step's output
(`tags: ${{ steps.meta.outputs.tags }}`, where `meta` is `docker/metadata-action` with
`images: ghcr.io/owner/app`, or a `run:` that writes `TAGS=owner/app:1.2`) or the workflow's
env (`${{ env.IMAGE_NAME }}`). The image names found there are that Dockerfile's image.
"""

from __future__ import annotations

import glob
import os
import re
import shlex

from tenure.doctor.readers.yamlnodes import YamlProblem, load_documents

_EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
# `ghcr.io/owner/app:tag`, `owner/app`: a name of two or more path parts.
_IMAGE = re.compile(r"(?<![\w./-])((?:[a-z0-9][\w.-]*/)+[\w.-]*[a-z0-9])(?=[:\s,\"']|$)", re.I)


def published_images(root: str) -> dict[str, str]:
    """owner/name (lowercased: an image's last two path parts) -> the Dockerfile (relative to
    `root`) a workflow builds and pushes under that name; a name several Dockerfiles are
    pushed under is left out."""
    claims: dict[str, set[str]] = {}
    paths = glob.glob(os.path.join(root, ".github", "workflows", "*.y*ml"))
    for path in sorted(paths):
        for repository, dockerfile in _builds(path):
            if os.path.isfile(os.path.join(root, dockerfile)):
                claims.setdefault(repository, set()).add(dockerfile)
    return {repo: files.pop() for repo, files in claims.items() if len(files) == 1}


def _builds(path: str) -> list[tuple[str, str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            documents = load_documents(handle.read())
    except (OSError, YamlProblem):
        return []
    workflow = documents[0] if documents and isinstance(documents[0], dict) else {}
    jobs = workflow.get("jobs")
    out: list[tuple[str, str]] = []
    for job in jobs.values() if isinstance(jobs, dict) else []:
        if not isinstance(job, dict) or not isinstance(job.get("steps"), list):
            continue
        env = {**_mapping(workflow.get("env")), **_mapping(job.get("env"))}
        steps = [s for s in job["steps"] if isinstance(s, dict)]
        by_id = {str(s["id"]): s for s in steps if "id" in s}
        for step in steps:
            if isinstance(step.get("run"), str):
                out += _run_builds(step["run"], {**env, **_mapping(step.get("env"))})
            if not str(step.get("uses", "")).startswith("docker/build-push-action"):
                continue
            given = _mapping(step.get("with"))
            dockerfile = _dockerfile(given)
            if dockerfile is None:
                continue
            tags = _resolve(given.get("tags", ""), by_id, {**env, **_mapping(step.get("env"))})
            out += [("/".join(n.lower().split("/")[-2:]), dockerfile)
                    for n in _IMAGE.findall(tags)]  # fmt: skip
    return out


_DOCKER_BUILD = re.compile(r"^\s*docker\s+(?:buildx\s+)?build\s+(.*)$")
_SHELL_VARIABLE = re.compile(r"\$\{?(\w+)\}?")


def _run_builds(run: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """`docker build -t $ECR_TAG ./backend -f ./backend/Dockerfile` in a `run:` step, its
    tag from the step's env (`ECR_TAG: '${{ steps.login-ecr.outputs.registry }}/owner/app:...'`:
    an expression the doctor cannot resolve stands for an unknown registry or tag)."""
    out: list[tuple[str, str]] = []
    for line in run.replace("\\\n", " ").splitlines():
        match = _DOCKER_BUILD.match(line)
        if match is None:
            continue
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:
            continue
        tags, given, positional = [], {}, []
        i = 0
        while i < len(words):
            word, value = words[i], words[i + 1] if i + 1 < len(words) else ""
            if word in ("-t", "--tag"):
                tags.append(value)
                i += 1
            elif word in ("-f", "--file"):
                given["file"] = value
                i += 1
            elif word.startswith("-"):
                i += 0 if "=" in word or word in ("--push", "--load", "--no-cache", "--pull") else 1
            else:
                positional.append(word)
            i += 1
        if positional:
            given["context"] = positional[-1]
        dockerfile = _dockerfile(given)
        for tag in tags:
            text = _EXPRESSION.sub("x", _SHELL_VARIABLE.sub(lambda m: env.get(m.group(1), ""), tag))
            out += [("/".join(n.lower().split("/")[-2:]), dockerfile)
                    for n in _IMAGE.findall(text) if dockerfile]  # fmt: skip
    return out


def _dockerfile(given: dict[str, str]) -> str | None:
    """build-push-action's `file` is relative to the workspace; without it, the context's."""
    context = given.get("context", ".")
    file = given.get("file") or os.path.join(context, "Dockerfile")
    if "$" in file or "://" in context or "://" in file:
        return None
    return os.path.normpath(file)


def _resolve(text: str, by_id: dict[str, dict[str, object]], env: dict[str, str]) -> str:
    """`${{ steps.meta.outputs.tags }}` becomes that step's own text (its `with:` values and
    its `run:`), `${{ env.NAME }}` the env's value; any other expression is unknown."""

    def value(match: re.Match[str]) -> str:
        parts = match.group(1).split(".")
        if parts[0] == "steps" and len(parts) > 1 and parts[1] in by_id:
            step = by_id[parts[1]]
            return " ".join([*_mapping(step.get("with")).values(), str(step.get("run", ""))])
        if parts[0] == "env" and len(parts) == 2:
            return env.get(parts[1], "")
        return ""

    return _EXPRESSION.sub(value, text)


def _mapping(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}

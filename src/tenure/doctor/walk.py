"""Find the files doctor reads under PATH, and say which it skipped and why.

A project tree holds anything: binaries, symlink loops, files the user cannot read, text in
Latin-1. None of these may stop the doctor; each becomes a Skipped line in the report.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

from tenure.doctor import helm
from tenure.doctor.dockerfile import copied_files
from tenure.doctor.model import Skipped

MAX_FILE_BYTES = 2 * 1024 * 1024
# Not the project's own running configuration (FOREIGN.md: skip docs, tests, CI files,
# templates for other applications), or not the project at all.
SKIP_DIRS = {"tests", "test", "docs", "doc", "examples"}
# Not the project's own text at all: skipped without a word, as every linter does.
IGNORED_DIRS = {"node_modules", "__pycache__", "site-packages", "venv", "env", "dist", "build"}
# Hidden folders that hold a platform's deployment spec: DigitalOcean App Platform's
# `.do/app.yaml` (its workers' `run_command`, its `envs`).
PLATFORM_DOT_DIRS = {".do"}
KINDS = {
    "python": ("*.py",),
    "yaml": ("*.yml", "*.yaml"),
    "systemd": ("*.service",),
    "supervisord": ("*.conf", "*.ini"),
    "procfile": ("Procfile", "Procfile.*"),
    "dotenv": (".env",),
    # pm2's JavaScript/JSON process files (its YAML ones are read with the YAML).
    "pm2": ("ecosystem*.js", "ecosystem*.cjs", "ecosystem*.json", "pm2*.json", "pm2*.js"),
}


# Words in a file's path that mark a development, test or CI environment: not production.
NOT_PRODUCTION = {"dusk", "ci", "travis", "dev", "devel", "develop", "development", "local", "sail",
                  "github", "gitlab", "circleci", "drone", "buildkite", "jenkins",
                  "appveyor", "e2e", "homestead", "vagrant", "feature"}  # fmt: skip
# ("feature": a feature-branch space or preview stack, manifest_celery_worker_feature.yml)
CI_FILES = {"bitbucket-pipelines.yml", "azure-pipelines.yml", "jenkinsfile"}


def is_dockerfile(name: str) -> bool:
    """`Dockerfile`, `Dockerfile-release`, `app.Dockerfile`, `php.dockerfile`, `Containerfile`."""
    lower = name.lower()
    return (
        name.startswith("Dockerfile") or lower.endswith(".dockerfile") or lower == "containerfile"
    )


def holds_image(folder: str) -> bool:
    """A `build/` folder holding a Dockerfile is the image's source (`docker/release/build/`
    with its entrypoint script), not build output: walked like any other."""
    if os.path.basename(folder) != "build":
        return False
    try:
        return any(is_dockerfile(name) for name in os.listdir(folder))
    except OSError:
        return False


def is_development_name(rel: str) -> bool:
    """`.env.testing`, `.env.dusk.example`, `.ci/.env.ci`, `docker-compose.dev.yml`,
    `.env.dev.docker`: named for development or tests, so not the running configuration; nor
    are CI files (`.gitlab-ci.yml`, `bitbucket-pipelines.yml`, `.github/workflows/`,
    `.env.github`).
    Folders count only when named so outright (`dev/docker/`, `.ci/`): `/usr/local/bin` in an
    image's rootfs is not a local setup."""
    *folders, name = rel.lower().split("/")
    words = re.split(r"[._-]+", name)
    if name in CI_FILES or any(w in NOT_PRODUCTION or w.startswith("test") for w in words):
        return True
    return any(
        f.lstrip(".") in DEVELOPMENT_FOLDERS or set(re.split(r"[._-]+", f)) & CI_WORDS
        for f in folders
    )


def is_template_folder(name: str) -> bool:
    """`{{ cookiecutter.project_slug }}/`, `cookiecutter-app/`: files other projects are
    generated from (Baserow ships a plugin boilerplate with its own Compose files)."""
    return "{{" in name or "cookiecutter" in name.lower()


def is_foreign_template(rel: str, has_chart: bool = False) -> bool:
    """A Compose file under a `templates/` folder is another application's, shipped for users
    to pick (a catalogue of services), unless the folder is a Helm chart's own templates."""
    folders = rel.lower().split("/")[:-1]
    return not has_chart and "templates" in folders


# Folders only CI reads (`.github/workflows/`, `.circleci/`, `.gitlab-ci/`). Not `.github/`
# as a whole: Pterodactyl's Dockerfile copies `.github/docker/supervisord.conf` into its image.
CI_WORDS = {"ci", "circleci", "buildkite", "workflows"}
DEVELOPMENT_FOLDERS = {"dev", "development", "ci", "test", "tests", "testing", "local_testing",
                       "e2e", "homestead", "vagrant"}  # fmt: skip


@dataclass
class FoundFile:
    path: str  # absolute
    rel: str  # as shown to a person: relative to PATH
    data: bytes


@dataclass
class Tree:
    root: str
    files: dict[str, list[FoundFile]] = field(default_factory=lambda: {k: [] for k in KINDS})
    skipped: list[Skipped] = field(default_factory=list)
    charts: dict[str, dict[str, Any]] = field(default_factory=dict)  # Helm values by chart


def kind_of(name: str) -> str | None:
    for kind, patterns in KINDS.items():
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return kind
    return None


def scan(root: str) -> Tree:
    root = os.path.abspath(root)
    tree = Tree(root)
    if os.path.isfile(root):
        _take(tree, os.path.dirname(root), root)
        return tree

    def on_error(exc: OSError) -> None:
        where = os.path.relpath(exc.filename, root) if exc.filename else root
        tree.skipped.append(Skipped(where, f"cannot list directory: {exc.strerror}"))

    dockerfiles: list[str] = []
    for directory, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                # Never followed: a link to a parent would loop forever.
                tree.skipped.append(Skipped(rel, "symbolic link to a directory, not followed"))
            elif name in IGNORED_DIRS and not holds_image(full):
                continue
            elif name in SKIP_DIRS:
                tree.skipped.append(Skipped(rel, "not running configuration (tests, docs...)"))
            elif is_template_folder(name):
                tree.skipped.append(Skipped(rel, "a template for other projects, not this "
                                            "project's deployment"))  # fmt: skip
            elif not name.startswith(".") or name in PLATFORM_DOT_DIRS:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            _take(tree, root, os.path.join(directory, name))
            if is_dockerfile(name):
                dockerfiles.append(os.path.join(directory, name))
    _take_copied(tree, root, dockerfiles)
    return tree


def _take_copied(tree: Tree, root: str, dockerfiles: list[str]) -> None:
    """Files a Dockerfile copies into its image are deployment files wherever they live, in
    folders the walk passes over included (`.github/docker/supervisord.conf`)."""
    taken = {f.path for files in tree.files.values() for f in files}
    for dockerfile in dockerfiles:
        try:
            with open(dockerfile, "rb") as handle:
                text = handle.read(MAX_FILE_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for path in copied_files(root, dockerfile, text):
            if path not in taken:
                taken.add(path)
                _take(tree, root, path, kind_of(untemplated(os.path.basename(path))))


# A config an image renders before it starts (`horizon.conf.tpl` through envsubst): read as
# the config it becomes, when a Dockerfile copies it in.
TEMPLATE_SUFFIXES = (".tpl", ".tmpl", ".template", ".j2")


def untemplated(name: str) -> str:
    for suffix in TEMPLATE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _take(tree: Tree, root: str, path: str, kind: str | None = None) -> None:
    kind = kind or kind_of(os.path.basename(path))
    if kind is None:
        return
    rel = os.path.relpath(path, root)
    try:
        info = os.stat(path)  # follows a symlink; a loop or a dangling link raises here
        if not stat.S_ISREG(info.st_mode):
            # A FIFO or device named like a config file would block or never end.
            tree.skipped.append(Skipped(rel, "not a regular file"))
            return
        if info.st_size > MAX_FILE_BYTES:
            tree.skipped.append(Skipped(rel, f"larger than {MAX_FILE_BYTES // 1024 // 1024} MB"))
            return
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        tree.skipped.append(Skipped(rel, f"cannot read: {exc.strerror or exc}"))
        return
    if b"\0" in data[:8192]:
        tree.skipped.append(Skipped(rel, "binary file"))
        return
    chart = helm.chart_root(path) if kind == "yaml" and b"{{" in data else None
    if chart is not None:  # a Helm template: read as rendered with the chart's values
        if chart not in tree.charts:
            tree.charts[chart] = helm.chart_values(chart)
        notes: list[str] = []
        try:
            text = helm.render(data.decode("utf-8", "replace"), tree.charts[chart], notes)
            data = text.encode()
        except (TypeError, ValueError, RecursionError) as exc:  # read as written: skipped later
            tree.skipped.append(Skipped(rel, f"Helm template not rendered: {exc}"))
        tree.skipped += [Skipped(rel, f"Helm template {note}") for note in notes]
    tree.files[kind].append(FoundFile(path, rel, data))


def decode(found: FoundFile) -> str | Skipped:
    """The file as text, or why it is skipped (configuration files must be UTF-8)."""
    try:
        return found.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skipped(found.rel, f"not UTF-8 text (byte {exc.start})")


def read_dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines of a .env file, for Compose's own ${VAR} interpolation."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        env[key.strip()] = value.strip().strip("'\"")
    return env

"""Read a Laravel project and apply the Laravel rules: the entry point engine.py calls."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from tenure.doctor.budget.check import check as check_budget
from tenure.doctor.budget.php_reader import read_php
from tenure.doctor.laravel.checks import Project, check
from tenure.doctor.laravel.config import read_config
from tenure.doctor.laravel.deploy import ArtisanWorker, deployed, read_workers
from tenure.doctor.laravel.jobs import CodeScan, resolve, scan_classes
from tenure.doctor.laravel.php import EnvFiles, parse
from tenure.doctor.laravel.runtime_env import compose_environments, dockerfile_environments
from tenure.doctor.laravel.schedule import scheduled_workers
from tenure.doctor.laravel.services import follow
from tenure.doctor.laravel.written_env import written_env_files
from tenure.doctor.model import Finding, Skipped, Source
from tenure.doctor.tie import tie
from tenure.doctor.walk import (
    IGNORED_DIRS,
    MAX_FILE_BYTES,
    SKIP_DIRS,
    Tree,
    holds_image,
    is_dockerfile,
)

# Not the application's own code: dependencies, build output, views, runtime files.
PHP_SKIP = (
    IGNORED_DIRS
    | SKIP_DIRS
    | {"vendor", "storage", "bootstrap", "public", "resources", "lang", "Tests"}
)
SCRIPT_NAMES = {"run", "Dockerfile", "entrypoint", "start"}


@dataclass
class Audit:
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files_read: int = 0
    jobs: int = 0
    workers: int = 0


def is_laravel(root: str) -> bool:
    return os.path.isfile(os.path.join(root, "artisan")) and os.path.isfile(
        os.path.join(root, "composer.json")
    )


def audit(root: str, base: str, tree: Tree) -> Audit:
    """`root`: the Laravel project; `base`: what finding paths are relative to; `tree`: the
    deployment files doctor already found under its PATH."""
    result = Audit()
    env = EnvFiles(root, base)
    files = _files(root, result) + _beside(root, tree.root, result)
    dockerfiles = [
        (os.path.relpath(path, base), data.decode("utf-8", "replace"))
        for path, data in files
        if is_dockerfile(os.path.basename(path)) and b"ENV" in data
    ]
    env.add_written(written_env_files(files, base))
    env.add_runtime(compose_environments(tree, base) + dockerfile_environments(dockerfiles))
    config = read_config(root, base, env)
    result.skipped += config.skipped
    scan = CodeScan()
    scripts: list[tuple[str, str]] = []
    table = config.batch_table.encode()
    batch_table_found = False
    scheduled: list[ArtisanWorker] = []
    for path, data in files:
        rel = os.path.relpath(path, base)
        name = os.path.basename(path)
        if name.endswith(".php"):
            result.files_read += 1
            in_database = os.sep + "database" + os.sep in path
            if in_database and table in data:
                batch_table_found = True
            schedules = b"queue:" in data and b"->command(" in data
            if b"class " in data or b"Bus::" in data or schedules:
                tree_php = parse(data)
                scan_classes(tree_php, rel, env, scan)
                if schedules:  # routes/console.php (Laravel 11+) has no class
                    scheduled += scheduled_workers(root, base, rel, tree_php)
        elif b"artisan" in data:
            result.files_read += 1
            scripts.append((rel, data.decode("utf-8", "replace")))
    batch_table_found = batch_table_found or _schema_dump_creates(root, config.batch_table)
    jobs = resolve(scan)
    for job in jobs:
        follow(job, scan)  # the HTTP calls of the service methods handle() calls
    result.skipped += [
        Skipped(
            str(job.source),
            f"job {job.name} calls {call}: not followed, so an HTTP call behind it is not checked",
        )
        for job in jobs
        for call in job.unfollowed
    ]
    workers, skipped = read_workers(tree, scripts, unread=True)
    workers = _tie(tree, base, workers, scripts, files)
    unread = "its stop grace could not be read, so it was not compared with the jobs' timeouts"
    skipped += [
        Skipped(str(w.source), f"worker started here ({w.command}): {unread}")
        for w in workers
        if w.platform_grace is None
    ]
    workers += scheduled
    result.skipped += skipped
    result.jobs, result.workers = len(jobs), len(workers)
    project = Project(
        config,
        env,
        jobs,
        workers,
        scan.batches,
        batch_table_found,
        Source(os.path.relpath(root, base) if root != base else ".", None),
    )
    result.findings = check(project) + check_budget(read_php(files, base))
    said = set(map(id, result.skipped))
    result.skipped += [
        s for s in dict.fromkeys(config.skipped) if id(s) not in said and s not in result.skipped
    ]
    return result


def _tie(
    tree: Tree,
    base: str,
    workers: list[ArtisanWorker],
    scripts: list[tuple[str, str]],
    files: list[tuple[str, bytes]],
) -> list[ArtisanWorker]:
    """A worker in a script or Dockerfile gets the grace of the Compose service or Kubernetes
    container that runs its image. Every Dockerfile is given, not only those naming artisan:
    the image that runs `entrypoint.sh worker` names no artisan itself. Paths are relative to
    the doctor's PATH, so a project audited with --laravel elsewhere keeps its own graces."""
    if os.path.realpath(base) != os.path.realpath(tree.root):
        return deployed(workers)
    texts = dict(scripts)
    for path, data in files:
        if is_dockerfile(os.path.basename(path)):
            texts.setdefault(os.path.relpath(path, base), data.decode("utf-8", "replace"))
    return tie(tree, workers, texts)


def _beside(root: str, top: str, result: Audit) -> list[tuple[str, bytes]]:
    """An application in a sub-folder (`backend/`) is deployed by scripts and Dockerfiles
    beside it (`backend-worker.dockerfile`, `backend-worker/init.sh`): those, not its PHP."""
    if not root.startswith(top.rstrip(os.sep) + os.sep):
        return []
    inside = root + os.sep
    return [
        (path, data)
        for path, data in _files(top, result)
        if not path.endswith(".php") and not path.startswith(inside)
    ]


def _schema_dump_creates(root: str, table: str) -> bool:
    """`php artisan schema:dump` squashes the migrations into database/schema/<connection>-
    schema.sql (or .dump): a table it creates exists without a migration file."""
    folder = os.path.join(root, "database", "schema")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return False
    create = re.compile(rb"CREATE TABLE[^(\n]*\b" + re.escape(table.encode()) + rb"\b", re.I)
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith((".sql", ".dump")) and os.path.getsize(path) <= 20 * MAX_FILE_BYTES:
            with open(path, "rb") as handle:
                if create.search(handle.read()):
                    return True
    return False


def _files(root: str, result: Audit) -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if (d not in PHP_SKIP or holds_image(os.path.join(directory, d)))
            and not d.startswith(".")
            and not os.path.islink(os.path.join(directory, d))
        )
        for name in sorted(filenames):
            script = name.endswith(".sh") or name in SCRIPT_NAMES or is_dockerfile(name)
            if not (name.endswith(".php") or script):
                continue
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(MAX_FILE_BYTES)
            except OSError as exc:
                result.skipped.append(
                    Skipped(os.path.relpath(path, root), f"cannot read: {exc.strerror}")
                )
                continue
            if b"\0" not in data[:4096]:
                found.append((path, data))
    return found

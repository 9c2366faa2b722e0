"""Run every check and assemble the report: load the app, read the tree, compare the clocks."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import time
import traceback
from dataclasses import dataclass

from tenure.app import App
from tenure.core.errors import ConfigError
from tenure.core.records import JobRecord
from tenure.doctor.astutil import Module
from tenure.doctor.budget.check import check as check_budget
from tenure.doctor.budget.python_reader import parse_more, read_python
from tenure.doctor.celery.payloads import check_payloads
from tenure.doctor.clocks import check_clocks
from tenure.doctor.code import (
    AstJob,
    batch_members,
    check_dispatch_sites,
    check_job,
    enrich,
    find_jobs,
    model_from_ast,
    parse_modules,
    parse_one,
    relpath,
)
from tenure.doctor.config import ConfigProblem, read_overrides
from tenure.doctor.config import apply as apply_overrides
from tenure.doctor.history import Limits, check_history, measure, read_history, store_note
from tenure.doctor.model import SEVERITIES, Finding, JobModel, Report, Skipped, Source, Value
from tenure.doctor.one_place import one_finding_a_place
from tenure.doctor.periodic import check_periodic
from tenure.doctor.reach import check_reach
from tenure.doctor.readers import read_deployments
from tenure.doctor.rules import finding
from tenure.doctor.walk import Tree, scan
from tenure.extras import install_line

INTERNAL_PREFIX = "tenure."


class CannotRun(Exception):
    """The doctor could not run (exit 2): the app cannot be imported or PATH does not exist."""


@dataclass
class LoadedApp:
    app: App | None
    attr: str
    module_file: str | None
    problem: Finding | None = None


def diagnose(
    app_spec: str | None,
    path: str = ".",
    *,
    history: bool = True,
    limits: Limits | None = None,
    laravel: str | None = None,
    celery: str | None = None,
    detect: bool = True,
) -> Report:
    """`laravel`: a Laravel project to audit too (found by itself under PATH when `detect`);
    `celery`: MODULE:ATTR or a .py path of a Celery app to audit too."""
    root = os.path.abspath(path)
    if not os.path.exists(root):
        raise CannotRun(f"PATH {path!r} does not exist")
    base = root if os.path.isdir(root) else os.path.dirname(root)
    try:
        overrides = read_overrides(root)
    except ConfigProblem as exc:
        raise CannotRun(str(exc)) from exc
    report = Report(root=root, app_spec=app_spec)
    loaded = load_app(app_spec, base) if app_spec else LoadedApp(None, "", None)
    if loaded.problem is not None:
        report.findings.append(loaded.problem)
    fallback = Source(relpath(loaded.module_file, base), 1) if loaded.module_file else Source()

    tree = scan(root)
    report.skipped += tree.skipped
    modules, skipped = parse_modules(tree.files["python"])
    report.skipped += skipped
    if loaded.app is not None:
        modules += _job_sources(loaded.app, modules, base, report)
    report.files_read = sum(len(files) for files in tree.files.values())

    ast_jobs = find_jobs(modules)
    models = _job_models(loaded, ast_jobs, report)
    report.jobs = [m for m, _ in models]
    members = batch_members(modules)
    for model, ast_job in models:
        if ast_job is not None:
            report.findings += check_job(model, ast_job, members)
    if loaded.app is not None:
        report.findings += check_periodic(loaded.app, report.jobs, time.time())
    names = {m.name for m in report.jobs} | {a.function.name for a in ast_jobs}
    report.findings += check_dispatch_sites(modules, names)
    python = tree.files["python"]
    report.findings += check_budget(read_python(parse_more(python, modules), python))

    deployments = read_deployments(tree)
    report.skipped += deployments.skipped
    report.launches = deployments.launches
    for launch in report.launches:
        report.skipped += [Skipped(str(launch.source), p) for p in launch.problems]
    foreign = _foreign(report, tree, base, laravel, celery, detect=detect)
    # History first: a job's measured p95 decides whether it outlives the worker's grace.
    past = _read_history(loaded.app, report, limits) if history and loaded.app else None
    if not foreign or report.jobs or report.launches:  # a pure Laravel/Celery audit: no tenure
        report.findings += check_clocks(report.launches, report.jobs, Source(relpath(root, base)))
    if past is not None and loaded.app is not None:
        report.findings += _history(loaded.app, report, fallback, limits, past)
    report.findings = one_finding_a_place(apply_overrides(report.findings, overrides))
    report.notes += [o.note() for o in overrides.values()]
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    report.findings.sort(
        key=lambda f: (rank[f.severity], str(f.location.path), f.location.line or 0)
    )
    return report


def _foreign(report: Report, tree: Tree, base: str, laravel: str | None, celery: str | None,
             *, detect: bool) -> bool:  # fmt: skip
    """Run the Laravel and Celery audits that apply; True when one ran."""
    from tenure.doctor.celery.checks import CannotLoad
    from tenure.doctor.celery.checks import audit as audit_celery
    from tenure.doctor.celery.detect import find_celery_settings
    from tenure.doctor.laravel.discover import is_laravel, laravel_apps

    ran = False
    projects = [os.path.abspath(laravel)] if laravel else []
    if laravel and not is_laravel(projects[0]):
        raise CannotRun(f"--laravel {laravel}: no artisan and composer.json there")
    if not projects and detect and os.path.isdir(report.root):
        projects = laravel_apps(report.root)  # the root, or `backend/`, `api/`...
    for project in projects:
        _audit_laravel(report, tree, base, project)
        ran = True
    if not celery and detect and report.root not in projects and not report.jobs:
        settings = find_celery_settings(tree.files["python"])
        if settings is not None:  # said in the report, so a wrong guess is visible
            celery = settings.path
            report.notes.append(
                f"Celery settings read from {settings.rel} (the file that "
                "configures Celery most; choose another with --celery)"
            )
    if celery:
        try:
            result = audit_celery(celery, base, tree)
        except CannotLoad as exc:
            raise CannotRun(str(exc)) from exc
        report.findings += result.findings
        report.skipped += result.skipped
        reach = check_reach(tree.files["python"], base, result.limits)
        report.findings += reach.findings
        report.findings += check_payloads(tree.files["python"], reach.names)
        shown = ", ".join(result.workers[:4]) + (" ..." if len(result.workers) > 4 else "")
        report.notes.append(f"Celery: {result.tasks} task(s), {len(result.workers)} worker "
                            f"command(s) found{': ' + shown if shown else ''}")  # fmt: skip
        if reach.tasks:
            report.notes.append(reach.note())
        ran = True
    return ran


def _audit_laravel(report: Report, tree: Tree, base: str, project: str) -> None:
    try:  # tree-sitter is the `doctor` extra's: only Laravel audits need it
        from tenure.doctor.laravel.audit import audit as audit_laravel
    except ImportError as exc:
        raise CannotRun(f"auditing {project} as Laravel needs {exc.name}: "
                        f"{install_line('doctor')}") from exc  # fmt: skip
    # An application under PATH (`backend/`) keeps PATH's tree: its deployment files (the
    # Compose file, the worker's image) sit beside it, not inside it.
    inside = project == report.root or project.startswith(report.root + os.sep)
    found = audit_laravel(project, base, tree if inside else scan(project))
    report.findings += found.findings
    report.skipped += found.skipped
    report.files_read += found.files_read
    where = "" if project == report.root else f" ({os.path.relpath(project, report.root)})"
    report.notes.append(f"Laravel{where}: {found.jobs} queued job class(es), {found.workers} "
                        "worker command(s) found")  # fmt: skip


def load_app(spec: str, root: str) -> LoadedApp:
    """Import MODULE:ATTR from the current directory (as uvicorn and celery do). A tenure
    ConfigError raised while importing is a finding, not a crash: the AST checks go on."""
    module_name, _, attr = spec.partition(":")
    attr = attr or "app"
    if not module_name:
        raise CannotRun(f"--app: expected MODULE:ATTR such as myproject.jobs:app, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ConfigError as exc:
        where = _blame(exc, root)
        problem = finding(
            "app-invalid",
            f"importing {module_name} failed: {exc}",
            "fix the setting named above; `tenure worker` refuses this app until then",
            where)  # fmt: skip
        return LoadedApp(None, attr, where.path and os.path.join(root, where.path), problem)
    except ImportError as exc:
        raise CannotRun(f"--app {spec}: cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise CannotRun(f"--app {spec}: importing {module_name!r} raised {exc!r}") from exc
    app = getattr(module, attr, None)
    if not isinstance(app, App):
        raise CannotRun(f"--app {spec}: expected {module_name}.{attr} to be a tenure.App, "
                        f"got {type(app).__name__}")  # fmt: skip
    return LoadedApp(app, attr, getattr(module, "__file__", None))


def _blame(exc: BaseException, root: str) -> Source:
    """The user's own line that raised: the last frame under PATH."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename).startswith(root + os.sep)]  # fmt: skip
    if not frames:
        return Source()
    frame = frames[-1]
    return Source(relpath(os.path.abspath(frame.filename), root), frame.lineno)


def _job_sources(app: App, modules: list[Module], root: str, report: Report) -> list[Module]:
    """Parse the files that define the app's jobs but were not read from PATH (outside it, or
    skipped by the tree walk)."""
    known = {os.path.realpath(m.path) for m in modules}
    extra: list[Module] = []
    for job in app.jobs.values():
        path = _source_file(job.fn)
        if path is None or os.path.realpath(path) in known:
            continue
        known.add(os.path.realpath(path))
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            report.skipped.append(Skipped(path, f"cannot read job source: {exc.strerror}"))
            continue
        parsed = parse_one(path, relpath(path, root), data)
        if isinstance(parsed, Skipped):
            report.skipped.append(parsed)
        else:
            extra.append(parsed)
    return extra


def _source_file(fn: object) -> str | None:
    try:
        path = inspect.getsourcefile(fn)  # type: ignore[arg-type]
    except TypeError:
        return None
    return os.path.abspath(path) if path else None


def _job_models(
    loaded: LoadedApp, ast_jobs: list[AstJob], report: Report
) -> list[tuple[JobModel, AstJob | None]]:
    if loaded.app is None:
        return [(model_from_ast(a), a) for a in ast_jobs]
    by_place = {(os.path.realpath(a.module.path), a.function.name): a for a in ast_jobs}
    out: list[tuple[JobModel, AstJob | None]] = []
    matched: set[int] = set()
    default = Source(note="tenure job default")
    for job in loaded.app.jobs.values():
        if job.name.startswith(INTERNAL_PREFIX):
            continue  # tenure's own jobs (the batch coordinator): their clocks are ours to keep
        path = _source_file(job.fn)
        ast_job = by_place.get((os.path.realpath(path), job.fn.__name__)) if path else None
        policy = job.policy
        model = JobModel(
            name=job.name,
            queue=job.queue,
            source=Source(relpath(path, report.root), None) if path else Source(),
            timeout=Value("job timeout", policy.timeout, "s", default),
            kill_after=Value("job kill_after", policy.kill_after, "s", default),
            tries=policy.tries,
            tries_source=default,
            has_retry_until=job.retry_until is not None,
            is_async=job.is_async,
            path=path,
        )
        if ast_job is not None:
            enrich(model, ast_job)
            matched.add(id(ast_job))
        out.append((model, ast_job))
    for ast_job in ast_jobs:
        if id(ast_job) in matched or ast_job.receiver != loaded.attr:
            continue
        report.findings.append(finding(
            "job-not-registered",
            f"job '{ast_job.name}' in {ast_job.module.rel} is not registered when --app "
            f"{report.app_spec} loads: workers will fail its jobs with 'no job named "
            f"{ast_job.name!r}'.",
            f"import {ast_job.module.rel.removesuffix('.py').replace(os.sep, '.')} from the "
            "module --app names, so its jobs register when the worker starts",
            Source(ast_job.module.rel, ast_job.line), job=ast_job.name))  # fmt: skip
    return out


def _read_history(app: App, report: Report, limits: Limits | None) -> list[JobRecord] | None:
    """The store's recent jobs (None when there is no store to read), and each job's measured
    p95 put on its model."""
    url = app.url
    if url.startswith("sqlite:"):
        from tenure.stores.sqlite import sqlite_path

        try:
            db = sqlite_path(url)
        except ValueError as exc:
            report.skipped.append(Skipped("history", str(exc)))
            return None
        # Opening a missing SQLite file would create it: a doctor must not leave files behind.
        if not os.path.exists(db):
            report.skipped.append(Skipped("history", f"no store at {db} yet (no jobs run)"))
            return None
    limits = limits or Limits()
    try:
        records = read_history(app.store, limits)
    except Exception as exc:  # an unreachable store must not hide the other findings
        report.skipped.append(Skipped("history", f"could not read the store: {exc}"))
        return None
    measured = measure(records, limits, store_note(app.store))
    for model in report.jobs:
        model.measured = measured.get(model.name)
    return records


def _history(
    app: App, report: Report, fallback: Source, limits: Limits | None, records: list[JobRecord]
) -> list[Finding]:
    try:
        jobs = {m.name: m for m in report.jobs}
        return check_history(app.store, jobs, fallback, limits, records)
    except Exception as exc:  # an unreachable store must not hide the other findings
        report.skipped.append(Skipped("history", f"could not read the store: {exc}"))
        return []

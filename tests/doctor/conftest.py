"""Fixtures for doctor tests: isolated imports of sample apps, and sample projects on disk."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.doctor import Report, diagnose

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
STUBS = HERE / "stubs"


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each sample app is imported fresh and forgotten afterwards; third-party clients the
    samples use (requests, httpx, boto3) come from tiny stand-ins in stubs/."""
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(STUBS))
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def fixture_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "doctor.json").exists())


def expected(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((FIXTURES / name / "doctor.json").read_text())
    return data


def run_in(
    path: Path, app: str | None, monkeypatch: pytest.MonkeyPatch, **kwargs: object
) -> Report:
    """Run the doctor from inside a project, as a person would (`cd project; tenure doctor`)."""
    monkeypatch.chdir(path)
    return diagnose(app, ".", **kwargs)  # type: ignore[arg-type]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


# What makes a folder a Laravel app to the doctor; a test's own files may replace them.
LARAVEL_APP = {"artisan": "<?php\n", "composer.json": "{}\n"}


def laravel_project(
    root: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch, *, app_dir: str = ""
) -> Report:
    """A Laravel project written under `root` (its app in `app_dir`, `files` as given) and
    diagnosed from inside it without git history, as `cd root; tenure doctor` would."""
    markers = {f"{app_dir}/{name}" if app_dir else name: text for name, text in LARAVEL_APP.items()}
    return run_in(write(root, {**markers, **files}), None, monkeypatch, history=False)


def sites(report: Report, rule: str) -> list[str]:
    """Where each finding of `rule` is, as "path:line"."""
    return [f"{f.location.path}:{f.location.line}" for f in report.findings if f.rule == rule]


def sited(report: Report, rule: str) -> list[str]:
    """Each finding of `rule` as "path:line message"."""
    return [
        f"{f.location.path}:{f.location.line} {f.message}"
        for f in report.findings
        if f.rule == rule
    ]


def located(report: Report, rule: str | None = None) -> list[str]:
    """Each finding (of `rule`, or all) as "rule path:line message"."""
    return [
        f"{f.rule} {f.location.path}:{f.location.line} {f.message}"
        for f in report.findings
        if rule is None or f.rule == rule
    ]


def rule_ids(report: Report) -> list[str]:
    return sorted(f.rule for f in report.findings)

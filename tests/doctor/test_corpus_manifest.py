"""The doctor corpus (bench/doctor_corpus): well-formed, and the independent check's ten
applications stay out of it. bench/ is not an installed package: it is imported from the
checkout."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "doctor_corpus"
HELD_OUT = ("coolify", "pixelfed", "invoiceninja", "unit3d", "monica", "lychee", "saleor",
            "paperless", "plane", "defectdojo")  # fmt: skip
RULE_FIELDS = {"rule", "file", "line", "why", "confidence"}


def load(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(CORPUS.parents[1]))
    return importlib.import_module(f"bench.doctor_corpus.{name}")


def manifest() -> list[dict[str, str]]:
    projects: list[dict[str, str]] = tomllib.loads((CORPUS / "manifest.toml").read_text())[
        "project"
    ]
    return projects


def test_at_least_ten_laravel_and_eight_celery_projects_pinned_by_commit() -> None:
    projects = manifest()
    kinds = [p["kind"] for p in projects]
    assert kinds.count("laravel") >= 10 and kinds.count("celery") >= 8
    for project in projects:
        assert len(project["commit"]) == 40 and "/" in project["repo"], project
        assert "://" not in project["repo"]  # owner/name only, never a host
    assert len({p["name"] for p in projects}) == len(projects)


def test_the_held_out_applications_are_not_in_the_corpus() -> None:
    for project in manifest():
        text = (project["name"] + " " + project["repo"]).lower().replace("-", "")
        assert not any(name in text for name in HELD_OUT), project


def test_every_project_has_its_hand_written_expectations() -> None:
    for project in manifest():
        data = tomllib.loads((CORPUS / "projects" / f"{project['name']}.toml").read_text())
        findings, traps = data.get("finding", []), data.get("trap", [])
        assert findings or traps, project["name"]
        for entry in findings:
            assert set(entry) >= RULE_FIELDS, (project["name"], entry)
            assert entry["confidence"] in ("high", "medium", "low")
        for entry in traps:
            assert {"rule", "file", "why"} <= set(entry), (project["name"], entry)


def test_a_report_matches_by_rule_file_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    score = load("score", monkeypatch)
    exact = score.Expected("laravel-queue-sync", ".env.example", 21, "")
    assert exact.matches("laravel-queue-sync", ".env.example", 21)
    assert not exact.matches("laravel-queue-sync", ".env.example", 22)
    assert not exact.matches("laravel-queue-sync", ".env", 21)
    anywhere = score.Expected("*", "composer.json", None, "")
    assert anywhere.matches("celery-task-unbounded", "composer.json", 7)


def test_sparse_checkout_patterns_escape_glob_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = load("fetch", monkeypatch)
    assert fetch.glob_escape("public/fonts/[x]*.ttf") == "public/fonts/\\[x\\]\\*.ttf"

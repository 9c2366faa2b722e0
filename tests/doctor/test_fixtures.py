"""Acceptance 1: every sample project yields exactly its expected finding ids."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, expected, fixture_names, rule_ids, run_in


def test_there_are_at_least_twelve_broken_and_three_clean_projects() -> None:
    names = fixture_names()
    clean = [n for n in names if not expected(n)["expected"]]
    assert len(clean) >= 3
    assert len(names) - len(clean) >= 12


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_yields_exactly_its_findings(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = expected(name)
    report = run_in(FIXTURES / name, spec["app"], monkeypatch)  # type: ignore[arg-type]
    assert rule_ids(report) == sorted(spec["expected"]), [
        (f.rule, str(f.location), f.message) for f in report.findings
    ]
    for finding in report.findings:
        assert finding.location.path, f"{finding.rule} has no file to point at"
        assert finding.fix and finding.message

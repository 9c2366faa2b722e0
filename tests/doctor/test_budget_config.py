"""A project's rule choices (pyproject.toml / tenure-doctor.toml), `tenure doctor --rules` on a
base install, and the budget rules in JSON and SARIF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tenure.doctor import CannotRun, diagnose
from tenure.doctor.budget.index import BUDGET_RULES
from tenure.doctor.output import to_json, to_sarif

from conftest import write

VIEW = """
    from shop.models import Order

    def close_all(request):
        for order in Order.objects.filter(open=True):
            order.close()
            order.save()
"""


def project(tmp_path: Path, config: dict[str, str]) -> Path:
    files = {"shop/views.py": VIEW, **config}
    return write(tmp_path, {n: textwrap.dedent(t) for n, t in files.items()})


def rules_of(root: Path) -> dict[str, str]:
    report = diagnose(None, str(root), history=False)
    return {f.rule: f.severity for f in report.findings if f.rule != "no-worker-deployed"}


def test_without_config_the_default_severity(tmp_path: Path) -> None:
    assert rules_of(project(tmp_path, {})) == {"work-in-request": "warning"}


def test_pyproject_turns_a_rule_off_with_its_reason(tmp_path: Path) -> None:
    root = project(tmp_path, {"pyproject.toml": """
        [tool.tenure.doctor.rules]
        work-in-request = { severity = "off", reason = "admin-only view behind a 10-row cap" }
    """})  # fmt: skip
    report = diagnose(None, str(root), history=False)
    assert "work-in-request" not in {f.rule for f in report.findings}
    assert any("admin-only view behind a 10-row cap" in n for n in report.notes)


def test_tenure_doctor_toml_changes_severity(tmp_path: Path) -> None:
    root = project(tmp_path, {"tenure-doctor.toml": """
        [rules]
        work-in-request = { severity = "error", reason = "our CI blocks on requests that grow" }
    """})  # fmt: skip
    assert rules_of(root) == {"work-in-request": "error"}


def test_tenure_doctor_toml_wins_over_pyproject(tmp_path: Path) -> None:
    root = project(tmp_path, {
        "pyproject.toml": """
            [tool.tenure.doctor.rules]
            work-in-request = { severity = "off", reason = "old choice" }
        """,
        "tenure-doctor.toml": """
            [tool.tenure.doctor.rules]
            work-in-request = { severity = "info", reason = "kept visible, not failing" }
        """,
    })  # fmt: skip
    assert rules_of(root) == {"work-in-request": "info"}


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('work-in-requests = { severity = "off", reason = "x" }',
         "'work-in-requests' is not a doctor rule (did you mean work-in-command"),
        ('work-in-request = { severity = "off" }', "a reason is required"),
        ('work-in-request = { severity = "loud", reason = "x" }',
         "severity must be one of off, error, warning, info, got 'loud'"),
        ('work-in-request = "off"', "expected { severity"),
        ('work-in-request = { severity = "off", reason = "x", until = 3 }', "unknown key(s) until"),
    ],
)  # fmt: skip
def test_bad_config_is_a_clear_error(tmp_path: Path, entry: str, says: str) -> None:
    root = project(tmp_path, {"pyproject.toml": f"[tool.tenure.doctor.rules]\n{entry}\n"})
    with pytest.raises(CannotRun, match=r"pyproject\.toml") as caught:
        diagnose(None, str(root), history=False)
    assert says in str(caught.value)


def test_broken_toml_is_a_clear_error(tmp_path: Path) -> None:
    root = project(tmp_path, {"tenure-doctor.toml": "[rules\n"})
    with pytest.raises(CannotRun, match=r"tenure-doctor\.toml: cannot read it as TOML"):
        diagnose(None, str(root), history=False)


def test_unknown_rule_exits_2_on_the_command_line(tmp_path: Path) -> None:
    root = project(tmp_path, {"pyproject.toml": """
        [tool.tenure.doctor.rules]
        no-such-rule = { severity = "off", reason = "x" }
    """})  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tenure", "doctor", str(root), "--no-history"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "'no-such-rule' is not a doctor rule" in done.stderr


BASE_INSTALL = """
import sys
for extra in ("yaml", "tree_sitter", "tree_sitter_php"):
    sys.modules[extra] = None  # an import of it raises ImportError, as on a base install
sys.argv = ["tenure", "doctor", "--rules"]
from tenure.cli import main
main()
"""


def test_rules_listing_on_a_base_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BASE_INSTALL], capture_output=True, text=True, timeout=120,
        check=False, env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for rule, severity, *_ in BUDGET_RULES:
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith(rule + " "))
        assert severity in line.split()
    assert "client-timeout-missing" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80  # wrapped to $COLUMNS


def test_json_and_sarif_carry_the_budget_rules(tmp_path: Path) -> None:
    report = diagnose(None, str(project(tmp_path, {})), history=False)
    data = to_json(report)
    found = [f for f in data["findings"] if f["rule"] == "work-in-request"]  # type: ignore[index, union-attr]
    assert found and "5-second budget" in found[0]["why"]
    assert found[0]["message"] == (
        "Django view shop/views.py:close_all walks every row of Order.objects.filter() and "
        "works on each (order.save, line 7; per row: write)."
    )  # the entry point, the loop, the per-row work; why and fix beside it
    assert "start a batch from the model" in found[0]["fix"]
    sarif = to_sarif(report)
    run = sarif["runs"][0]  # type: ignore[index]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert {r[0] for r in BUDGET_RULES} <= set(ids)
    result = next(r for r in run["results"] if r["ruleId"] == "work-in-request")
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "shop/views.py"
    json.dumps(sarif)


@pytest.mark.parametrize("columns", [80, 120])
def test_the_text_report_fits_columns_when_piped(tmp_path: Path, columns: int) -> None:
    """Piped with $COLUMNS=80 (the day-two trial), the report's clocks table and lines ran
    to 100 columns: the width for a pipe was fixed and $COLUMNS ignored."""
    write(tmp_path, {
        "jobs.py": "import tenure\napp = tenure.App()\n\n@app.job(timeout=90)\n"
                   "def export_all_the_rows_of_the_orders_table() -> None: ...\n",
        "docker-compose.yml": "services:\n  worker:\n"
                              "    command: tenure worker --app jobs:app --grace 30\n",
    })  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tenure", "doctor", str(tmp_path), "--no-history"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "COLUMNS": str(columns)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the grace finding is an error
    assert "grace-not-below-platform" in done.stdout
    widest = max(len(line.rstrip()) for line in done.stdout.splitlines())
    assert widest <= columns, done.stdout
    assert widest > 76, done.stdout  # it used the width it was given

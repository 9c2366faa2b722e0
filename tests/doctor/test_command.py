"""`tenure doctor` as a command: exit codes, formats, SARIF that code scanning accepts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tenure.doctor.command import register
from tenure.doctor.rules import RULES, render_rules_markdown

from conftest import FIXTURES, HERE, STUBS, write

REGISTER = (
    "import typer\n"
    "from tenure.doctor.command import register\n"
    "cli = typer.Typer()\n"
    "cli.callback()(lambda: None)\n"
    "register(cli)\n"
    "cli()\n"
)


def make_cli() -> typer.Typer:
    cli = typer.Typer()
    cli.callback()(lambda: None)  # keeps `doctor` a subcommand, as on the real CLI
    register(cli)
    return cli


def invoke(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(make_cli(), ["doctor", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_exit_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    clean = FIXTURES / "clean_compose"
    assert invoke(["--app", "fx_clean_compose:app"], clean, monkeypatch)[0] == 0
    broken = FIXTURES / "requests_no_timeout"
    code, text = invoke(["--app", "fx_requests_no_timeout:app"], broken, monkeypatch)
    assert code == 1
    assert "client-timeout-missing" in text and "fx_requests_no_timeout.py:9" in text
    assert "fix:" in text and "timeout=" in text
    warn_only = FIXTURES / "sleep_loop"
    assert invoke(["--app", "fx_sleep_loop:app"], warn_only, monkeypatch)[0] == 0
    assert invoke(["--app", "fx_sleep_loop:app", "--strict"], warn_only, monkeypatch)[0] == 1


def test_cannot_run_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = invoke(["--app", "no_such_module:app"], tmp_path, monkeypatch)
    assert code == 2 and "cannot import" in text
    write(tmp_path, {"crashy.py": "raise RuntimeError('boom at import')\n"})
    assert invoke(["--app", "crashy:app"], tmp_path, monkeypatch)[0] == 2
    write(tmp_path, {"notapp.py": "app = 42\n"})
    assert invoke(["--app", "notapp:app"], tmp_path, monkeypatch)[0] == 2
    assert invoke(["missing-dir"], tmp_path, monkeypatch)[0] == 2
    assert invoke(["--format", "xml"], tmp_path, monkeypatch)[0] == 2


def test_json_output(monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = invoke(["--app", "fx_k8s_default_grace:app", "--format", "json"],
                        FIXTURES / "k8s_default_grace", monkeypatch)  # fmt: skip
    data = json.loads(text)
    assert code == 1
    (finding,) = data["findings"]
    assert finding["rule"] == "grace-not-below-platform"
    assert finding["location"] == {"path": "k8s/worker.yaml", "line": 17, "note": ""}
    clocks = {c["label"]: c for c in finding["clocks"]}
    assert clocks["worker --grace"]["amount"] == 40
    assert clocks["Kubernetes terminationGracePeriodSeconds"]["source"]["note"] == (
        "Kubernetes default"
    )
    assert finding["why"] == RULES["grace-not-below-platform"].why
    (job,) = data["jobs"]
    assert job["timeout"]["amount"] == 30 and job["timeout"]["source"]["line"] == 6


def sarif_validator() -> object:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((HERE / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


@pytest.mark.parametrize("name", ["clean_k8s", "httpx_timeout_over_job", "tries_unlimited",
                                  "job_not_registered", "supervisord_orphans"])  # fmt: skip
def test_sarif_is_valid_2_1_0(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = json.loads((FIXTURES / name / "doctor.json").read_text())
    _, text = invoke(["--app", spec["app"], "--format", "sarif"], FIXTURES / name, monkeypatch)
    log = json.loads(text)
    errors = sorted(sarif_validator().iter_errors(log), key=str)  # type: ignore[attr-defined]
    assert not errors, errors[0].message
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert sorted(r["ruleId"] for r in run["results"]) == sorted(spec["expected"])
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        # GitHub code scanning places each result by a relative URI and a line.
        (location,) = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "SRCROOT" and not artifact["uri"].startswith("/")
        assert location["physicalLocation"]["region"]["startLine"] >= 1


def test_real_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(STUBS)}
    fixture = FIXTURES / "compose_grace_over_platform"
    done = subprocess.run(
        [sys.executable, "-c", REGISTER, "doctor", "--app",
         "fx_compose_grace_over_platform:app", "--format", "json"],
        cwd=fixture, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert [f["rule"] for f in json.loads(done.stdout)["findings"]] == ["grace-not-below-platform"]
    clean = subprocess.run(
        [sys.executable, "-c", REGISTER, "doctor", "--app", "fx_clean_hosts:app"],
        cwd=FIXTURES / "clean_hosts", env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "no findings" in clean.stdout
    assert not list(fixture.glob("*.db")) and not list((FIXTURES / "clean_hosts").glob("*.db"))


def test_rules_index_lists_every_rule() -> None:
    page = render_rules_markdown()
    for rule in RULES.values():
        assert f"`{rule.id}` ({rule.severity})" in page
    docs = HERE.parents[1] / "docs" / "rules.md"
    if docs.exists():  # once the page is committed it must match the table it is made from
        assert docs.read_text() == page

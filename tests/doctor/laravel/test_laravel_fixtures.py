"""Laravel projects: each sample yields exactly its expected finding ids, and values carry the
file they were read from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenure.doctor import diagnose
from tenure.doctor.model import Value
from tenure.doctor.rules import RULES

FIXTURES = Path(__file__).parent / "fixtures"


def names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "doctor.json").exists())


def expected(name: str) -> list[str]:
    data: dict[str, list[str]] = json.loads((FIXTURES / name / "doctor.json").read_text())
    return sorted(data["expected"])


def run(name: str, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.chdir(FIXTURES / name)
    return diagnose(None, ".", history=False)


def test_at_least_ten_broken_and_two_clean_projects() -> None:
    clean = [n for n in names() if not expected(n)]
    assert len(clean) >= 2
    assert len(names()) - len(clean) >= 10


@pytest.mark.parametrize("name", names())
def test_fixture_yields_exactly_its_findings(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / name)
    report = diagnose(None, ".", history=False)  # auto-detected: artisan + composer.json
    found = sorted(f.rule for f in report.findings)
    assert found == expected(name), [(f.rule, str(f.location), f.message) for f in report.findings]
    for finding in report.findings:
        assert finding.rule.startswith("laravel-")
        assert RULES[finding.rule].cite.startswith("https://laravel.com/docs/")
        assert finding.fix and finding.message


def test_retry_after_names_the_env_file_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / "job_timeout_from_env")
    (error,) = diagnose(None, ".", history=False).findings
    lease = next(c for c in error.clocks if isinstance(c, Value) and "retry_after" in c.label)
    assert lease.amount == 60
    assert lease.source.path == ".env.example" and lease.source.line == 3
    assert "config/queue.php" in lease.source.note
    assert error.location.path == "app/Jobs/ImportCsv.php"


def test_horizon_timeout_default_and_local_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / "horizon_timeout_over_retry_after")
    (error,) = diagnose(None, ".", history=False).findings
    assert "production.supervisor-1" in error.message  # 'local' (500 s) is not running config
    timeout = error.clocks[0]
    assert isinstance(timeout, Value) and timeout.amount == 120
    assert "HORIZON_TIMEOUT" in timeout.source.note


def test_explicit_laravel_path_and_not_a_laravel_project(tmp_path: Path) -> None:
    from tenure.doctor import CannotRun

    report = diagnose(None, str(tmp_path), history=False, laravel=str(FIXTURES / "sqs_connection"))
    assert [f.rule for f in report.findings] == ["laravel-sqs-visibility-timeout"]
    assert "AWS" in report.findings[0].message
    with pytest.raises(CannotRun):
        diagnose(None, str(tmp_path), history=False, laravel=str(tmp_path))


def test_sarif_and_json_carry_laravel_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from tenure.doctor.output import to_json, to_sarif

    monkeypatch.chdir(FIXTURES / "batch_problems")
    report = diagnose(None, ".", history=False)
    sarif = to_sarif(report)
    ids = [r["ruleId"] for r in sarif["runs"][0]["results"]]
    assert sorted(ids) == ["laravel-batch-callback-this", "laravel-batch-table-missing"]
    assert {f["rule"] for f in to_json(report)["findings"]} == set(ids)


def test_env_variants_at_any_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every .env* file is read, at any depth; development and test variants (by name or by
    APP_ENV: develop, local, 'testing-ci') are not the running configuration."""
    monkeypatch.chdir(FIXTURES / "env_variants_snipe")
    report = diagnose(None, ".", history=False)
    where = sorted(str(f.location) for f in report.findings if f.rule == "laravel-queue-sync")
    assert where == [
        ".env.docker:6 (QUEUE_CONNECTION=sync)",
        "docker/.env.production:2 (QUEUE_CONNECTION=sync)",
    ]


def test_deployment_environment_wins_over_env_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compose environment (map and list forms), env_file and Dockerfile ENV are env sources
    ranked before every .env file, as real environment variables are in Laravel."""
    from tenure.doctor.laravel.php import EnvFiles
    from tenure.doctor.laravel.runtime_env import compose_environments, dockerfile_environments
    from tenure.doctor.walk import scan

    root = FIXTURES / "runtime_env_compose"
    env = EnvFiles(str(root), str(root))
    text = (root / "Dockerfile").read_text()
    env.add_runtime(compose_environments(scan(str(root)), str(root))
                    + dockerfile_environments([("Dockerfile", text)]))  # fmt: skip
    assert list(env.files)[:3] == [
        "docker-compose.yml (service app)",
        "docker-compose.yml (service worker)",
        "Dockerfile",
    ]
    entry = env.get("QUEUE_CONNECTION")
    assert entry is not None and str(entry.source) == "docker/app.env:2 (QUEUE_CONNECTION=sync)"
    monkeypatch.chdir(root)
    where = sorted(str(f.location) for f in diagnose(None, ".", history=False).findings)
    assert where == [".env.example:2 (QUEUE_CONNECTION=sync)",
                     "docker/app.env:2 (QUEUE_CONNECTION=sync)"]  # fmt: skip


def test_classes_sharing_a_short_name_are_both_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """App\\Jobs\\Billing\\SendInvoice (timeout inherited through `use App\\Support\\BaseJob`)
    and App\\Jobs\\Mail\\SendInvoice: the second is not dropped, and the parent is the
    imported BaseJob, not App\\Jobs\\BaseJob."""
    monkeypatch.chdir(FIXTURES / "same_short_name")
    found = diagnose(None, ".", history=False).findings
    where = sorted(
        (str(f.location.path), f.message.split(" may run ")[1].split(",")[0])
        for f in found
        if f.rule == "laravel-timeout-not-below-retry-after"
    )
    assert where == [
        ("app/Jobs/Mail/SendInvoice.php", "150 s"),
        ("app/Support/BaseJob.php", "120 s"),
    ]


def test_kubernetes_env_and_config_maps_win_over_env_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """retry_after comes from the container's env (45), not .env.example's 90."""
    monkeypatch.chdir(FIXTURES / "runtime_env_kubernetes")
    (error,) = diagnose(None, ".", history=False).findings
    lease = next(c for c in error.clocks if isinstance(c, Value) and "retry_after" in c.label)
    assert lease.amount == 45
    assert (lease.source.path, lease.source.line) == ("deploy/worker.yaml", 19)

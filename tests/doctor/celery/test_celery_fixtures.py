"""Celery apps, read from source (PATH) or imported (MODULE:ATTR): exact findings per sample."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.doctor import CannotRun, diagnose
from tenure.doctor.rules import RULES

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def forget_imports() -> Iterator[None]:
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if not name.startswith(("celery", "kombu", "billiard", "vine", "amqp", "click")):
            del sys.modules[name]


def names() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "doctor.json").exists())


def spec(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((FIXTURES / name / "doctor.json").read_text())
    return data


def test_at_least_five_broken_and_two_clean_apps() -> None:
    clean = [n for n in names() if not spec(n)["expected"]]
    assert len(clean) >= 2
    assert len(names()) - len(clean) >= 5


@pytest.mark.parametrize("name", names())
def test_fixture_yields_exactly_its_findings(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    target = str(spec(name)["celery"])
    if ":" in target:
        pytest.importorskip("celery")
    monkeypatch.chdir(FIXTURES / name)
    monkeypatch.syspath_prepend(str(FIXTURES / name))
    report = diagnose(None, ".", history=False, celery=target)
    found = sorted(f.rule for f in report.findings)
    assert found == sorted(spec(name)["expected"]), [  # type: ignore[call-overload]
        (f.rule, str(f.location), f.message) for f in report.findings
    ]
    for finding in report.findings:
        assert finding.location.path, f"{finding.rule} has no file to point at"
        assert RULES[finding.rule].cite.startswith("https://docs.celeryq.dev/")


def test_countdown_findings_point_at_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES / "countdown_past_visibility")
    report = diagnose(None, ".", history=False, celery="celeryconfig.py")
    assert sorted((f.location.path, f.location.line) for f in report.findings) == [
        ("reminders.py", 8),
        ("reminders.py", 9),
    ]


def test_unreadable_broker_is_said_not_guessed(tmp_path: Path) -> None:
    config = tmp_path / "celeryconfig.py"
    config.write_text("import os\nbroker_url = os.environ['BROKER']\ntask_acks_late = True\n")
    report = diagnose(None, str(tmp_path), history=False, celery=str(config))
    assert report.findings == []
    assert any("visibility timeout checks skipped" in s.reason for s in report.skipped)


def test_missing_celery_target_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(CannotRun):
        diagnose(None, str(tmp_path), history=False, celery=str(tmp_path / "nope.py"))
    with pytest.raises(CannotRun):
        diagnose(None, str(tmp_path), history=False, celery="no_such_module_here:app")


def test_arithmetic_settings_are_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`60 * 60` and a name bound earlier are a time limit; an env() read stays unknown."""
    (tmp_path / "settings.py").write_text(
        "SOFT = 60 * 5\n"
        "CELERY_BROKER_URL = 'redis://r:6379/0'\n"
        "CELERY_TASK_ACKS_LATE = True\n"
        "CELERY_TASK_TIME_LIMIT = SOFT + 60 * 60\n"
    )
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    (late,) = [f for f in report.findings if f.rule == "celery-visibility-below-time-limit"]
    assert "may run 3900 s" in late.message and "3600 s" in late.message
    (tmp_path / "settings.py").write_text(
        "import os\n"
        "CELERY_BROKER_URL = 'redis://r:6379/0'\n"
        "CELERY_TASK_ACKS_LATE = True\n"
        "CELERY_TASK_TIME_LIMIT = int(os.environ['LIMIT']) * 60\n"
    )
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert "celery-visibility-below-time-limit" not in [f.rule for f in report.findings]
    assert any("task_time_limit" in s.reason and "unknown" in s.reason for s in report.skipped)


def test_environment_reads_resolve_from_env_files_or_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Cut from bookwyrm celerywyrm/settings.py: `env("KEY", default)` is the .env file's value
    when one sets it, else the default; a development .env variant does not count."""
    (tmp_path / "settings.py").write_text(
        "from environs import Env\nenv = Env()\n"
        "CELERY_BROKER_URL = 'redis://r:6379/0'\n"
        "CELERY_TASK_ACKS_LATE = True\n"
        "CELERY_TASK_TIME_LIMIT = env.int('CELERY_TASK_TIME_LIMIT', 600) * 10\n"
    )
    (tmp_path / ".env.dev").write_text("CELERY_TASK_TIME_LIMIT=1\n")
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    (late,) = [f for f in report.findings if f.rule == "celery-visibility-below-time-limit"]
    assert "may run 6000 s" in late.message
    (tmp_path / ".env.example").write_text("CELERY_TASK_TIME_LIMIT=30\n")
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert "celery-visibility-below-time-limit" not in [f.rule for f in report.findings]

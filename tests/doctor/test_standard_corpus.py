"""The time-budget standard's corpus (bench/doctor_corpus/standard): the manifest and the apps'
annotations parse, every annotated line exists and holds the code it names, and the scorer runs
end to end on today's doctor. Nothing here asserts the doctor's score."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

STANDARD = Path(__file__).resolve().parents[2] / "bench" / "doctor_corpus" / "standard"


@pytest.fixture
def score(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(STANDARD.parents[2]))
    return importlib.import_module("bench.doctor_corpus.standard.score")


def test_the_manifest_names_twenty_real_cases_of_both_kinds(score: ModuleType) -> None:
    cases = score.load_cases()
    kinds = [c.kind for c in cases]
    assert len(cases) >= 20 and kinds.count("laravel") >= 8 and kinds.count("python") >= 8
    readme = (STANDARD / "README.md").read_text()
    for case in cases:
        assert case.violations or case.traps, case.name
        assert re.fullmatch(r"[\w.-]+/[\w.-]+ \S+", case.source), case.source
        assert f"`{case.name}`" in readme, f"README does not say where {case.name} was cut from"
        if case.kind == "laravel":  # what makes the doctor read it as a Laravel project
            assert (case.root / "artisan").is_file() and (case.root / "composer.json").is_file()


@pytest.mark.parametrize("group", ["cases", "apps", "check2", "check3"])
def test_every_annotated_line_exists_and_holds_its_code(score: ModuleType, group: str) -> None:
    if group == "cases":
        cases = score.load_cases(which="all")
    else:
        cases = score.load_apps(which="tuning" if group == "apps" else group)
    if group == "apps":
        assert {c.name for c in cases} == {"laravel_app", "django_app"}
    for case in cases:
        for mark in case.violations + case.traps:
            path = case.root / mark.file
            assert path.is_file(), f"{case.name}: {mark.file} does not exist"
            lines = path.read_text().splitlines()
            assert 1 <= mark.line <= len(lines), f"{case.name}: {mark.file}:{mark.line}"
            assert mark.code in lines[mark.line - 1], (
                f"{case.name}: {mark.file}:{mark.line} does not hold {mark.code!r}"
            )
            if mark.unit is not None:
                assert 1 <= mark.unit[0] <= mark.line <= mark.unit[1] <= len(lines)


def test_the_held_out_check_set_is_apart_from_the_tuning_set(score: ModuleType) -> None:
    tuning, check = score.load_cases(), score.load_cases(which="check")
    assert {c.set for c in tuning} == {"tuning"} and {c.set for c in check} == {"check"}
    assert 12 <= len(check) <= 16
    assert {c.kind for c in check} == {"laravel", "python"}
    assert sum(len(c.violations) for c in check) >= 8 and sum(len(c.traps) for c in check) >= 8
    every = sorted(c.name for c in score.load_cases(which="all"))
    assert every == sorted(c.name for c in tuning + check)
    repo = lambda case: case.source.split()[0]  # noqa: E731
    assert not {repo(c) for c in check} & {repo(c) for c in tuning}, "a repository is in both"
    readme = (STANDARD / "README.md").read_text()
    for case in check:
        assert case.violations or case.traps, case.name
        assert re.fullmatch(r"[\w.-]+/[\w.-]+ \S+", case.source), case.source
        assert f"`{case.name}`" in readme, f"README does not say where {case.name} was cut from"
        if case.kind == "laravel":
            assert (case.root / "artisan").is_file() and (case.root / "composer.json").is_file()


def test_the_second_held_out_set_is_two_apps_kept_apart(score: ModuleType) -> None:
    check2 = score.load_apps(which="check2")
    assert {c.name for c in check2} == {"laravel_check2", "django_check2"}
    assert {c.kind for c in check2} == {"laravel", "python"}
    assert {c.set for c in check2} == {"check2"}
    assert not {c.name for c in check2} & {c.name for c in score.load_apps()}  # not tuning
    assert {c.name for c in score.load_apps(which="all")} >= {c.name for c in check2}
    violations = [v for c in check2 for v in c.violations]
    traps = [t for c in check2 for t in c.traps]
    assert len(violations) >= 25 and len(traps) >= 25
    assert {v.rule for v in violations} == set(score.RULES)  # every rule id has a violation
    laravel = next(c for c in check2 if c.kind == "laravel")
    assert (laravel.root / "artisan").is_file() and (laravel.root / "composer.json").is_file()
    assert score.load_cases(which="check2") == []  # the cases hold no check2 entry
    with pytest.raises(score.BadManifest, match="no set 'nope'"):
        score.load_apps(which="nope")


def test_the_third_held_out_set_is_two_more_apps_kept_apart(score: ModuleType) -> None:
    check3 = score.load_apps(which="check3")
    assert {c.name for c in check3} == {"laravel_check3", "django_check3"}
    assert {c.kind for c in check3} == {"laravel", "python"} and {c.set for c in check3} == {
        "check3"
    }
    earlier = score.load_apps() + score.load_apps(which="check2")
    assert not {c.name for c in check3} & {c.name for c in earlier}  # neither tuning nor check2
    violations = [v for c in check3 for v in c.violations]
    traps = [t for c in check3 for t in c.traps]
    assert len(violations) >= 25 and len(traps) >= 25
    assert {v.rule for v in violations} == set(score.RULES)  # every rule id has a violation
    laravel = next(c for c in check3 if c.kind == "laravel")
    assert (laravel.root / "artisan").is_file() and (laravel.root / "composer.json").is_file()
    assert score.load_cases(which="check3") == []  # the cases hold no check3 entry


def test_a_set_other_than_tuning_or_check_is_a_clear_error(
    score: ModuleType, tmp_path: Path
) -> None:
    bad = tmp_path / "manifest.toml"
    bad.write_text('[[case]]\nname = "x"\nkind = "python"\nset = "holdout"\n')
    with pytest.raises(
        score.BadManifest, match="set must be tuning, check, check2, check3, not 'holdout'"
    ):
        score.load_cases(bad, which="all")
    bad.write_text('[[case]]\nname = "x"\nkind = "python"\n')
    assert [c.set for c in score.load_cases(bad)] == ["tuning"]  # no field: tuning
    assert score.load_cases(bad, which="check") == []
    with pytest.raises(score.BadManifest, match="no set 'nope'"):
        score.load_cases(bad, which="nope")
    with pytest.raises(SystemExit):
        score.main(["--set", "nope"])


def test_a_finding_matches_by_rule_file_and_line_window(score: ModuleType) -> None:
    case = next(c for c in score.load_cases() if c.violations and c.violations[0].unit)
    v = case.violations[0]
    inside = score.Reported(v.rule, v.file, v.unit[0])
    other_rule = score.Reported("batch-floods-queue" if v.rule != "batch-floods-queue"
                                else "work-in-request", v.file, v.line)  # fmt: skip
    far = score.Reported(v.rule, v.file, v.unit[1] + score.WINDOW + 50)
    outcome = score.score(case, [inside, inside, other_rule, far])
    tally = outcome.tallies[v.rule]
    assert tally.found >= 1 and tally.correct == 2 and tally.reported == 3
    assert str(far) in outcome.unexpected and str(other_rule) in outcome.unexpected


def test_a_finding_on_a_trap_is_a_false_alarm(score: ModuleType) -> None:
    case = next(c for c in score.load_cases() if c.traps and c.traps[0].rule != "*")
    trap = case.traps[0]
    outcome = score.score(case, [score.Reported(trap.rule, trap.file, trap.line)])
    assert outcome.tallies[trap.rule].trapped == 1 and len(outcome.trap_hits) == 1
    assert outcome.tallies[trap.rule].correct == 0


def test_a_broken_manifest_is_a_clear_error(score: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "manifest.toml"
    head = '[[case]]\nname = "x"\nkind = "laravel"\n'
    bad.write_text(head + '[[case.violation]]\nrule = "no-such-rule"\nfile = "a.php"\n'
                   'line = 1\ncode = "a"\nwhy = "b"\n')  # fmt: skip
    with pytest.raises(score.BadManifest, match="unknown rule 'no-such-rule'"):
        score.load_cases(bad)
    bad.write_text(head + '[[case.trap]]\nrule = "*"\n')
    with pytest.raises(score.BadManifest, match="lacks code, file, line, why"):
        score.load_cases(bad)


def test_the_scorer_runs_end_to_end(score: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert score.main(["--show", "--apps"]) == 0
    out = capsys.readouterr().out
    for rule in score.RULES:
        assert rule in out
    assert "laravel_app" in out and "django_app" in out
    assert score.main(["--only", "work-in-request"]) == 0
    assert score.main(["--only", "no-such-rule"]) == 2


def test_a_case_the_doctor_cannot_read_is_an_error_not_a_crash(
    score: ModuleType, tmp_path: Path
) -> None:
    case = score.Case("gone", "python", tmp_path / "missing", "owner/name path", (), ())
    outcome = score.run(case)
    assert "does not exist" in outcome.error and outcome.tallies == {}

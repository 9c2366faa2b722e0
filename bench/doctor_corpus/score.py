"""Score `tenure doctor` against the corpus: recall of the hand-written findings, false alarms
on the traps, and precision over every error and warning it reports.

    .venv/bin/python -m bench doctor-corpus [--mirror DIR] [--only NAME,...] [--show]
[--set tuning|check|check2|check3|check4|check5|check6|check7|check8|check9|check10|check11|independent|all]

--set picks the projects (manifest.toml `set`): the tuning set (the default) is what the readers
are fixed against; the check sets are annotated by hand first and scored once (check2: a fresh
set, annotated after the first check set was spent; independent: the ten applications kept out
of every other set, annotated blind by a reader who never saw the doctor's code; check3: twelve
more, annotated the same way after check2 was scored; check4, check5, check6 and check7: twelve
or thirteen more each, annotated blind for issue 29, each after the one before was spent;
check8: ten or more applications, annotated blind after check7 was scored; check9: twelve more,
seven Celery and five Laravel, annotated blind while check8 waits to be scored; check10: twelve
more, seven Celery and five Laravel, annotated blind after check9, scored once and spent; check11: twelve
more, six Celery and six Laravel, annotated blind after check10).

The sets check, check2, independent, check3, check4, check5, check6 and check7 were each scored
once (their numbers stay in SCORES.md) and are SPENT: they are tuning material now, read and fixed
against like the tuning set. The set that counts is the newest one annotated blind and scored once
(check8: annotated, not yet scored).

Each project's expected file, projects/NAME.toml, lists
  [[finding]]  rule, file, line | lines, why, confidence   what a correct analyzer must report
  [[trap]]     rule ("*" for any), file, line? | lines?, why  places that look wrong but are not
A report matches a finding when rule, file and line agree (a finding without a line matches
any line of its file; `lines = [first, last]` instead of `line` names a block, such as a whole
Compose service, and a report on any line inside it matches). Where a finding belongs is
written down in CONVENTION.md. Precision counts every error and warning the doctor reports;
infos are summaries, not claims, and are left out of it. A crash is a failed project.
"""  # noqa: E501 (the usage line names every set; the test reads it whole)

from __future__ import annotations

import argparse
import sys
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from bench.doctor_corpus.fetch import (
    HERE,
    SETS,
    Project,
    fetch_all,
    in_set,
    load_manifest,
    mirror_dir,
)

PROJECTS = HERE / "projects"


@dataclass(frozen=True)
class Expected:
    rule: str
    file: str
    line: int | None
    why: str
    # A block (a Compose service, a supervisor's array): a report on any line of it matches.
    lines: tuple[int, int] | None = None

    def matches(self, rule: str, path: str | None, line: int | None) -> bool:
        if self.rule not in (rule, "*") or self.file != path:
            return False
        if self.lines is not None:
            return line is not None and self.lines[0] <= line <= self.lines[1]
        return self.line is None or self.line == line

    @property
    def where(self) -> str:
        at = f"{self.lines[0]}-{self.lines[1]}" if self.lines else self.line
        return f"{self.file}:{at}"


@dataclass
class Score:
    name: str
    kind: str
    findings: int = 0
    found: int = 0
    traps: int = 0
    trapped: int = 0
    reported: int = 0  # errors and warnings
    correct: int = 0  # of those, matching an expected finding
    seconds: float = 0.0
    crash: str = ""
    missed: list[Expected] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)


def load_expected(name: str) -> tuple[list[Expected], list[Expected]]:
    data = tomllib.loads((PROJECTS / f"{name}.toml").read_text())

    def entries(key: str) -> list[Expected]:
        return [
            Expected(e["rule"], e["file"], e.get("line"), e.get("why", ""), span(e))
            for e in data.get(key, [])
        ]

    return entries("finding"), entries("trap")


def span(entry: dict[str, object]) -> tuple[int, int] | None:
    """An entry's `lines = [first, last]`, checked: a span and a `line` together are ambiguous."""
    lines = entry.get("lines")
    if lines is None:
        return None
    if "line" in entry or not (
        isinstance(lines, list)
        and len(lines) == 2
        and all(isinstance(n, int) for n in lines)
        and 0 < lines[0] <= lines[1]
    ):
        raise ValueError(f"{entry.get('file')}: lines must be [first, last] and replace line")
    return (lines[0], lines[1])


def score_project(project: Project) -> Score:
    from tenure.doctor import diagnose
    from tenure.doctor.rules import RULES

    score = Score(project.name, project.kind)
    expected, traps = load_expected(project.name)
    score.findings, score.traps = len(expected), len(traps)
    root = project.checkout / project.path
    celery = str(root / project.celery) if project.celery else None
    started = time.perf_counter()
    try:
        report = diagnose(None, str(root), history=False, celery=celery)
    except BaseException as exc:
        score.crash = "".join(traceback.format_exception_only(exc)).strip()
        return score
    finally:
        score.seconds = time.perf_counter() - started
    matched: set[int] = set()
    # The time-budget rules are scored where a corpus annotates them; a clock corpus that
    # does not is not made less precise by findings it never set out to read.
    annotated = {e.rule for e in [*expected, *traps]}
    for f in report.findings:
        if RULES[f.rule].group == "budget" and f.rule not in annotated:
            continue
        path, line = f.location.path, f.location.line
        hits = [i for i, e in enumerate(expected) if e.matches(f.rule, path, line)]
        matched.update(hits)
        where = f"{f.severity} {f.rule} {path}:{line}"
        if any(t.matches(f.rule, path, line) for t in traps):
            score.trapped += 1
            score.false_alarms.append(where)
        if f.severity == "info":
            continue
        score.reported += 1
        if hits:
            score.correct += 1
        elif where not in score.false_alarms:
            score.unexpected.append(where)
    score.found = len(matched)
    score.missed = [e for i, e in enumerate(expected) if i not in matched]
    return score


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     -"


def print_table(scores: list[Score], *, show: bool) -> None:
    head = (
        f"{'project':<22} {'kind':<8} {'recall':>14} {'traps hit':>11} {'precision':>14} {'s':>5}"
    )
    print(head)
    print("-" * len(head))
    kinds = sorted({s.kind for s in scores})
    subtotals = [total([s for s in scores if s.kind == k], f"all {k}") for k in kinds]
    for s in [*scores, *subtotals, total(scores)]:
        if s.name in ("TOTAL", subtotals[0].name if subtotals else ""):
            print("-" * len(head))
        state = f"  CRASH: {s.crash}" if s.crash else ""
        print(
            f"{s.name:<22} {s.kind:<8} {s.found:>3}/{s.findings:<3}{ratio(s.found, s.findings)} "
            f"{s.trapped:>4}/{s.traps:<4}  {s.correct:>3}/{s.reported:<3}"
            f"{ratio(s.correct, s.reported)} {s.seconds:5.1f}{state}"
        )
        if show and s.kind:
            for e in s.missed:
                print(f"    missed    {e.rule} {e.where}")
            for where in s.false_alarms:
                print(f"    trap hit  {where}")
            for where in s.unexpected:
                print(f"    unexpected {where}")


def total(scores: list[Score], name: str = "TOTAL") -> Score:
    out = Score(name, "")
    for s in scores:
        out.findings += s.findings
        out.found += s.found
        out.traps += s.traps
        out.trapped += s.trapped
        out.reported += s.reported
        out.correct += s.correct
        out.seconds += s.seconds
    crashes = [s.name for s in scores if s.crash]
    out.crash = f"{len(crashes)} crashed: {', '.join(crashes)}" if crashes else ""
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench doctor-corpus",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--mirror", default=mirror_dir(), help="directory of git mirrors")
    parser.add_argument(
        "--set",
        default="tuning",
        choices=(*SETS, "all"),
        help="which projects: the tuning set (default), a check set, or all",
    )
    parser.add_argument("--only", default="", help="only these projects (comma-separated)")
    parser.add_argument("--show", action="store_true", help="list misses and false alarms")
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.only.split(",")))
    projects = [p for p in in_set(load_manifest(), args.set) if not wanted or p.name in wanted]
    problems = fetch_all(projects, Path(args.mirror))
    for name, problem in problems.items():
        print(f"not scored: {name}: {problem}", file=sys.stderr)
    scores = [score_project(p) for p in projects if p.name not in problems]
    print_table(scores, show=args.show)
    return 1 if problems or any(s.crash for s in scores) else 0


if __name__ == "__main__":
    sys.exit(main())

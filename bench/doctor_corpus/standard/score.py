"""Score `tenure doctor` against the time-budget standard's hand-read ground truth.

    .venv/bin/python -m bench doctor-standard [--show] [--only RULE] [--apps] [--set SET]

manifest.toml lists the cases cut from real projects (cases/NAME/, each a tiny project of its
own); apps/NAME.toml annotate the two whole small applications (apps/NAME/). Each annotation
   [[..violation]] / [[..trap]]   rule, file, line, code, why, unit = [first, last]
names the line a reviewer points at (`code` is text that line holds) and the unit (method or
function) it belongs to. A finding matches an annotation when the rule is the same, the file is
the same and its line is within WINDOW lines of the annotated one or inside the unit: a rule may
name the loop, the call or the entry point. Only the rule ids of the standard (RULES) are
scored; every other finding of the doctor is left out. A trap is a right shape that must stay
quiet: a finding on one (rule "*" = any scored rule) is a false alarm.

Each case belongs to a set: `set = "check"` marks the held-out check set, annotated after the
rules were written and scored once; a case without the field belongs to the tuning set, the
one the rules were tuned on. check2: the second held-out set, written by an independent checker
after the rules, scored once (its two apps carry `set = "check2"`). check3: the third held-out
set, two more apps by another independent checker, scored once (`set = "check3"`). --set picks
tuning (the default), check, check2, check3 or all; --apps scores the apps of that set.

Per rule: recall = annotated violations found; precision = findings matching a violation, over
every finding of that rule (a second finding on an already found violation counts as correct,
not as recall). Rules the doctor does not have yet score 0 found. Exits non-zero only when the
doctor could not run or crashed, never because of the score.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"
APPS = HERE / "apps"
WINDOW = 3
SETS = ("tuning", "check", "check2", "check3")
RULES = (
    "work-in-request",
    "work-in-command",
    "work-in-migration",
    "job-not-batched",
    "coordinator-walks-rows",
    "member-dispatches",
    "job-resumes-from-cursor",
    "request-waits-for-job",
    "batch-floods-queue",
    "progress-total-regresses",
)


@dataclass(frozen=True)
class Mark:
    rule: str  # a rule id of RULES; "*" on a trap: any of them
    file: str
    line: int
    code: str
    why: str
    unit: tuple[int, int] | None = None

    def covers(self, rule: str, path: str, line: int | None) -> bool:
        if self.rule not in (rule, "*") or self.file != path:
            return False
        if line is None:
            return True
        near = abs(line - self.line) <= WINDOW
        return near or (self.unit is not None and self.unit[0] <= line <= self.unit[1])


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # laravel | python
    root: Path
    source: str  # where it was cut from
    violations: tuple[Mark, ...]
    traps: tuple[Mark, ...]
    set: str = "tuning"  # tuning | check | check2 | check3 (held out: never tuned on)


@dataclass(frozen=True)
class Reported:
    rule: str
    path: str
    line: int | None

    def __str__(self) -> str:
        return f"{self.rule} {self.path}:{self.line}"


@dataclass
class Tally:
    annotated: int = 0
    found: int = 0
    traps: int = 0
    trapped: int = 0
    reported: int = 0
    correct: int = 0

    def add(self, other: Tally) -> None:
        for name in ("annotated", "found", "traps", "trapped", "reported", "correct"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Outcome:
    case: Case
    tallies: dict[str, Tally] = field(default_factory=dict)
    missed: list[Mark] = field(default_factory=list)
    trap_hits: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""


class BadManifest(ValueError):
    """The manifest or an app's annotations cannot be read."""


def _marks(entries: list[dict[str, Any]], where: str, *, trap: bool) -> tuple[Mark, ...]:
    marks = []
    for i, e in enumerate(entries):
        missing = {"rule", "file", "line", "code", "why"} - set(e)
        if missing:
            raise BadManifest(f"{where}: entry {i + 1} lacks {', '.join(sorted(missing))}")
        allowed = (*RULES, "*") if trap else RULES
        if e["rule"] not in allowed:
            raise BadManifest(f"{where}: entry {i + 1}: unknown rule {e['rule']!r}")
        unit = e.get("unit")
        if unit is not None and (len(unit) != 2 or not unit[0] <= e["line"] <= unit[1]):
            raise BadManifest(f"{where}: entry {i + 1}: unit {unit} does not hold its line")
        marks.append(Mark(e["rule"], e["file"], int(e["line"]), e["code"], e["why"],
                          tuple(unit) if unit is not None else None))  # fmt: skip
    return tuple(marks)


def _case(data: dict[str, Any], root: Path, where: str) -> Case:
    for key in ("name", "kind"):
        if key not in data:
            raise BadManifest(f"{where}: no {key}")
    if data["kind"] not in ("laravel", "python"):
        raise BadManifest(f"{where}: kind must be laravel or python, not {data['kind']!r}")
    which = data.get("set", "tuning")
    if which not in SETS:
        raise BadManifest(f"{where}: set must be {', '.join(SETS)}, not {which!r}")
    source = f"{data.get('repo', '')} {data.get('path', '')}".strip()
    return Case(
        data["name"],
        data["kind"],
        root,
        source,
        _marks(data.get("violation", []), f"{where} violations", trap=False),
        _marks(data.get("trap", []), f"{where} traps", trap=True),
        which,
    )


def load_cases(manifest: Path = MANIFEST, which: str = "tuning") -> list[Case]:
    """The cases of one set (tuning, check) or of all; a case without `set` is tuning."""
    if which not in (*SETS, "all"):
        raise BadManifest(f"no set {which!r}: {', '.join(SETS)} or all")
    data = tomllib.loads(manifest.read_text())
    cases = [
        _case(c, manifest.parent / "cases" / c.get("name", "?"), f"case {c.get('name')}")
        for c in data.get("case", [])
    ]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise BadManifest("two cases share a name")
    return [c for c in cases if which in ("all", c.set)]


def load_apps(folder: Path = APPS, which: str = "tuning") -> list[Case]:
    """The whole apps of one set (an app without `set` is tuning) or of all."""
    if which not in (*SETS, "all"):
        raise BadManifest(f"no set {which!r}: {', '.join(SETS)} or all")
    apps = [
        _case(tomllib.loads(toml.read_text()), folder / toml.stem, f"app {toml.stem}")
        for toml in sorted(folder.glob("*.toml"))
    ]
    return [a for a in apps if which in ("all", a.set)]


def findings(case: Case) -> list[Reported]:
    """What the doctor reports under the standard's rule ids, paths relative to the case."""
    from tenure.doctor import diagnose

    report = diagnose(None, str(case.root), history=False)
    out = []
    for f in report.findings:
        if f.rule not in RULES or f.location.path is None:
            continue
        path = f.location.path
        if os.path.isabs(path):
            path = os.path.relpath(path, case.root)
        out.append(Reported(f.rule, path.replace(os.sep, "/"), f.location.line))
    return out


def score(case: Case, reported: list[Reported], only: str = "") -> Outcome:
    outcome = Outcome(case)

    def tally(rule: str) -> Tally:
        return outcome.tallies.setdefault(rule, Tally())

    violations = [v for v in case.violations if not only or v.rule == only]
    traps = [t for t in case.traps if not only or t.rule in (only, "*")]
    for v in violations:
        tally(v.rule).annotated += 1
    for t in traps:
        tally(t.rule).traps += 1
    found: set[int] = set()
    for r in reported:
        if only and r.rule != only:
            continue
        t = tally(r.rule)
        t.reported += 1
        hits = [i for i, v in enumerate(violations) if v.covers(r.rule, r.path, r.line)]
        if hits:
            t.correct += 1
            fresh = [i for i in hits if i not in found] or hits
            found.add(min(fresh, key=lambda i: abs(violations[i].line - (r.line or 0))))
            continue
        trap = next((x for x in traps if x.covers(r.rule, r.path, r.line)), None)
        if trap is not None:
            tally(trap.rule).trapped += 1
            outcome.trap_hits.append(f"{r}  (trap: {trap.why})")
        else:
            outcome.unexpected.append(str(r))
    for i in found:
        tally(violations[i].rule).found += 1
    outcome.missed = [v for i, v in enumerate(violations) if i not in found]
    return outcome


def run(case: Case, only: str = "") -> Outcome:
    started = time.perf_counter()
    try:
        reported = findings(case)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        outcome = Outcome(case, error="".join(traceback.format_exception_only(exc)).strip())
    else:
        outcome = score(case, reported, only)
    outcome.seconds = time.perf_counter() - started
    return outcome


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     -"


def by_rule(outcomes: list[Outcome]) -> dict[str, Tally]:
    rules: dict[str, Tally] = {rule: Tally() for rule in RULES}
    for o in outcomes:
        for rule, t in o.tallies.items():
            rules.setdefault(rule, Tally()).add(t)
    return rules


def print_rules(title: str, outcomes: list[Outcome], only: str) -> None:
    head = f"{title:<26} {'recall':>14} {'precision':>14} {'traps hit':>10}"
    print(head)
    print("-" * len(head))
    total = Tally()
    for rule, t in by_rule(outcomes).items():
        if only and rule not in (only, "*"):
            continue
        total.add(t)
        print(
            f"{rule:<26} {t.found:>3}/{t.annotated:<3}{ratio(t.found, t.annotated)} "
            f"{t.correct:>3}/{t.reported:<3}{ratio(t.correct, t.reported)} "
            f"{t.trapped:>4}/{t.traps:<4}"
        )
    print("-" * len(head))
    print(
        f"{'TOTAL':<26} {total.found:>3}/{total.annotated:<3}{ratio(total.found, total.annotated)}"
        f" {total.correct:>3}/{total.reported:<3}{ratio(total.correct, total.reported)} "
        f"{total.trapped:>4}/{total.traps:<4}"
    )


def print_details(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        lines = [f"    missed     {v.rule} {v.file}:{v.line}  ({v.code})" for v in o.missed]
        lines += [f"    trap hit   {hit}" for hit in o.trap_hits]
        lines += [f"    unexpected {where}" for where in o.unexpected]
        if lines:
            print(f"  {o.case.name} ({o.case.source or o.case.kind})")
            print("\n".join(lines))


def print_apps(outcomes: list[Outcome]) -> None:
    print(f"{'app':<14} {'violations found':>20} {'false alarms on right shapes':>30} "
          f"{'other findings':>15}")  # fmt: skip
    for o in outcomes:
        t = Tally()
        for tally in o.tallies.values():
            t.add(tally)
        print(
            f"{o.case.name:<14} {t.found:>6}/{t.annotated:<4}{ratio(t.found, t.annotated):>9} "
            f"{t.trapped:>20}/{t.traps:<9} {len(o.unexpected):>15}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench doctor-standard",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--show", action="store_true", help="list misses and false alarms")
    parser.add_argument("--only", default="", metavar="RULE", help="score this rule id only")
    parser.add_argument("--apps", action="store_true", help="also score the set's whole apps")
    parser.add_argument("--set", default="tuning", choices=(*SETS, "all"), dest="which",
                        help="which cases and apps: tuning (default), check (held out), check2 "
                        "(the second held-out set, written by an independent checker after the "
                        "rules, scored once), check3 (the third, likewise) or all")  # fmt: skip
    args = parser.parse_args(argv)
    if args.only and args.only not in RULES:
        print(f"--only: {args.only!r} is not a rule of the standard: {', '.join(RULES)}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        cases = load_cases(which=args.which)
        apps = load_apps(which=args.which) if args.apps else []
    except (BadManifest, tomllib.TOMLDecodeError, OSError) as exc:
        print(f"doctor-standard: {exc}", file=sys.stderr)
        return 2
    outcomes = [run(c, args.only) for c in cases]
    seconds = sum(o.seconds for o in outcomes)
    print(f"{len(cases)} cases cut from real projects ({args.which} set), {seconds:.1f} s")
    print_rules("cases: rule", outcomes, args.only)
    if args.show:
        print_details(outcomes)
    app_outcomes = [run(a, args.only) for a in apps]
    if app_outcomes:
        print()
        print_apps(app_outcomes)
        print_rules("apps: rule", app_outcomes, args.only)
        if args.show:
            print_details(app_outcomes)
    errors = [o for o in outcomes + app_outcomes if o.error]
    for o in errors:
        print(f"could not run on {o.case.name}: {o.error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

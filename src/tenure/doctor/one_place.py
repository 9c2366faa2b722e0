"""One finding a place: the reports of one rule on one line become one.

A shared helper that many jobs reach (a mailer every notification job calls) is one place a
user changes, so it is one finding (CONVENTION.md): the first report is kept, at the highest
severity any of them had, and its message names the other jobs that reach the same line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tenure.doctor.model import SEVERITIES, Finding

SHOWN = 5  # jobs named in full; the rest are counted, so that a message stays readable


def one_finding_a_place(findings: list[Finding]) -> list[Finding]:
    groups: dict[tuple[str, str, int], list[Finding]] = {}
    kept: list[Finding | tuple[str, str, int]] = []
    for f in findings:
        if f.location.path is None or not f.location.line:
            kept.append(f)  # a default or a whole file: not known to be one place
            continue
        key = (f.rule, f.location.path, f.location.line)
        if key not in groups:
            groups[key] = []
            kept.append(key)
        groups[key].append(f)
    return [item if isinstance(item, Finding) else _merge(groups[item]) for item in kept]


def _merge(same: list[Finding]) -> Finding:
    first = same[0]
    if len(same) == 1:
        return first
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    severity = min((f.severity for f in same), key=rank.__getitem__)
    others = _names(f.job for f in same[1:] if f.job and f.job != first.job)
    message = first.message
    if others:
        message = f"{message} The same line is reached from {others} too."
    elif len(same) > 1:
        message = f"{message} The same line is reached {len(same) - 1} more ways."
    return replace(first, severity=severity, message=message)


def _names(jobs: Iterable[str]) -> str:
    unique = list(dict.fromkeys(jobs))
    if not unique:
        return ""
    shown = ", ".join(unique[:SHOWN])
    rest = len(unique) - SHOWN
    return f"{shown} and {rest} more job{'s' if rest != 1 else ''}" if rest > 0 else shown

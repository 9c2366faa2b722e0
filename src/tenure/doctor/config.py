"""A project's choices about the doctor's rules: turn one off or change its severity, with a
reason, in pyproject.toml (`[tool.tenure.doctor.rules]`) or tenure-doctor.toml (`[rules]`, or
the same `[tool.tenure.doctor.rules]`):

    [tool.tenure.doctor.rules]
    work-in-command = { severity = "info", reason = "our commands run inside a queued job" }
    batch-floods-queue = { severity = "off", reason = "the export queue is its own" }

An unknown rule id, a severity that is not off/error/warning/info, or a missing reason is a
clear error (the doctor cannot run), never a silent no-op: a typo must not turn a rule off."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace

from tenure.doctor.model import SEVERITIES, Finding, Severity
from tenure.doctor.rules import RULES

FILES = ("pyproject.toml", "tenure-doctor.toml")  # the later wins for a rule set in both
LEVELS = ("off", *SEVERITIES)


class ConfigProblem(ValueError):
    """The rules configuration cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Override:
    rule: str
    severity: Severity | None  # None: off
    reason: str
    source: str  # the file it came from

    def note(self) -> str:
        level = self.severity or "off"
        return f"rule {self.rule} set to {level} in {self.source}: {self.reason}"


def read_overrides(root: str) -> dict[str, Override]:
    folder = root if os.path.isdir(root) else os.path.dirname(root)
    found: dict[str, Override] = {}
    for name in FILES:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigProblem(f"{name}: cannot read it as TOML: {exc}") from exc
        table = data.get("tool", {}).get("tenure", {}).get("doctor", {}).get("rules")
        if table is None and name == "tenure-doctor.toml":
            table = data.get("rules")
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigProblem(f"{name}: the rules entry must be a table of rule ids")
        for rule, entry in table.items():
            found[rule] = _override(name, rule, entry)
    return found


def _override(name: str, rule: str, entry: object) -> Override:
    where = f"{name}: rule {rule!r}"
    if rule not in RULES:
        close = sorted(r for r in RULES if r.split("-")[0] == rule.split("-")[0])[:3]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigProblem(f"{where} is not a doctor rule{hint}; `tenure doctor --rules` "
                            "lists them")  # fmt: skip
    if not isinstance(entry, dict):
        raise ConfigProblem(f"{where}: expected {{ severity = \"off\", reason = \"...\" }}, "
                            f"got {entry!r}")  # fmt: skip
    unknown = set(entry) - {"severity", "reason"}
    if unknown:
        raise ConfigProblem(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; only "
                            "severity and reason")  # fmt: skip
    level = entry.get("severity")
    if level not in LEVELS:
        raise ConfigProblem(f"{where}: severity must be one of {', '.join(LEVELS)}, "
                            f"got {level!r}")  # fmt: skip
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigProblem(f"{where}: a reason is required (reason = \"why this project "
                            "differs\"), so the next reader knows why")  # fmt: skip
    severity: Severity | None = None if level == "off" else level
    return Override(rule, severity, reason.strip(), name)


def apply(findings: list[Finding], overrides: dict[str, Override]) -> list[Finding]:
    out: list[Finding] = []
    for f in findings:
        override = overrides.get(f.rule)
        if override is None:
            out.append(f)
        elif override.severity is not None:
            out.append(replace(f, severity=override.severity))
    return out

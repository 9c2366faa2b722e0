"""Find `tenure worker ...` inside a deployment's command and read its options.

Commands arrive as lists (Compose, Kubernetes) or as shell text (systemd, supervisord,
Procfile), often wrapped: `sh -c "cd /app && exec tenure worker --grace 20"`. The worker's
defaults below mirror `tenure worker --help` (cli.py); a change there must change them too.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tenure.doctor.model import Launch, Setting, Source, Value
from tenure.doctor.readers.units import seconds

DEFAULT_LEASE_S = 30.0
DEFAULT_GRACE_S = 8.0
DEFAULT_QUEUES = ("default",)
ANY_QUEUE = "*"
SHELL_SEPARATORS = {"&&", "||", ";", "|", "&"}
_ENV_REF = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


@dataclass
class WorkerArgs:
    options: dict[str, str] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)  # options whose value is ${VAR}


def find_worker(argv: Sequence[str], env: Mapping[str, str] | None = None) -> WorkerArgs | None:
    """The options of the first `tenure worker` (or `python -m tenure worker`) in `argv`."""
    tokens = _expand(list(argv))
    for i, token in enumerate(tokens):
        is_script = os.path.basename(token) == "tenure"
        is_module = token == "tenure" and i > 0 and tokens[i - 1] == "-m"
        if (is_script or is_module) and i + 1 < len(tokens) and tokens[i + 1] == "worker":
            return _parse_options(tokens[i + 2 :], env or {})
    return None


def _expand(tokens: list[str]) -> list[str]:
    """Split shell text hidden inside tokens (`sh -c "..."`), so the worker is found anyway."""
    out: list[str] = []
    for token in tokens:
        if any(c.isspace() for c in token.strip()):
            try:
                out.extend(_expand(shlex.split(token, comments=True)))
            except ValueError:
                out.extend(token.split())
        else:
            out.append(token)
    return out


def split_command(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _parse_options(tokens: list[str], env: Mapping[str, str]) -> WorkerArgs:
    args = WorkerArgs()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in SHELL_SEPARATORS:
            break
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if not eq:
                takes_value = name not in ("burst", "help")
                value = tokens[i + 1] if takes_value and i + 1 < len(tokens) else ""
                i += 1 if takes_value else 0
            resolved = interpolate(value, env)
            if resolved is None:
                args.unresolved.append(name)
            else:
                args.options[name] = resolved
        i += 1
    return args


def interpolate(text: str, env: Mapping[str, str]) -> str | None:
    """${VAR:-default}, ${VAR} and $VAR from `env`, else the default; None when unknown."""
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match.group(1) or match.group(3)
        if name in env:
            return env[name]
        if match.group(2) is not None:
            return match.group(2)
        unknown = True
        return ""

    result = _ENV_REF.sub(replace, text)
    return None if unknown else result


def make_launch(
    *,
    platform: str,
    name: str,
    source: Source,
    args: WorkerArgs,
    platform_grace: Value | None,
    stop_signal: Setting | None = None,
    memory_limit: Value | None = None,
    orphans_children: Setting | None = None,
    unit: Source | None = None,
) -> Launch:
    """A Launch whose worker options carry the command's source, or the CLI default's."""
    default = Source(note="tenure worker default")
    problems = [f"--{n} is set from an environment variable the doctor cannot see" for n in
                args.unresolved]  # fmt: skip

    def clock(option: str, fallback: float | None, unit: str = "s") -> Value | None:
        raw = args.options.get(option)
        if raw is None:
            if fallback is None:
                return None
            return Value(f"worker --{option}", fallback, unit, default)
        amount = seconds(raw)
        if amount is None:
            problems.append(f"--{option}: expected a number, got {raw!r}")
            return Value(f"worker --{option}", fallback, unit, default) if fallback else None
        return Value(f"worker --{option}", amount, unit, source)

    lease = clock("lease", DEFAULT_LEASE_S)
    grace = clock("grace", DEFAULT_GRACE_S)
    assert lease is not None and grace is not None  # both have defaults
    queues_text = args.options.get("queues")
    if "queues" in args.unresolved:
        queues: tuple[str, ...] = (ANY_QUEUE,)  # unknown: assume it serves every queue
    elif queues_text:
        queues = tuple(q.strip() for q in queues_text.split(",") if q.strip())
    else:
        queues = DEFAULT_QUEUES
    concurrency_raw = seconds(args.options.get("concurrency", "1"))
    return Launch(
        platform=platform,
        name=name,
        source=source,
        queues=queues,
        concurrency=max(1, int(concurrency_raw or 1)),
        lease=lease,
        grace=grace,
        memory_mb=clock("memory", None, "MB"),
        platform_grace=platform_grace,
        stop_signal=stop_signal,
        memory_limit=memory_limit,
        orphans_children=orphans_children,
        problems=problems,
        unit=unit,
    )

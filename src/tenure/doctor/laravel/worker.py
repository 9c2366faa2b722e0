"""An artisan worker command (`php artisan queue:work|queue:listen|horizon`) as a deployment
file or script states it, and the unit the platform stops around it. Shared by the platform
readers (units.py) and the script reader (deploy.py); Celery's reader reuses the same shape."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tenure.doctor.model import Setting, Source, Value

COMMANDS = ("queue:work", "queue:listen", "horizon")
FLAGS = {"once", "stop-when-empty", "force", "quiet", "verbose", "no-interaction"}
SEPARATORS = {"&&", "||", ";", "|", "&"}
REDIRECTION = re.compile(r"^\d*(?:>>?|<|>&)")


@dataclass
class ArtisanWorker:
    platform: str  # compose | kubernetes | systemd | supervisord | procfile | script
    name: str
    source: Source
    command: str  # queue:work | queue:listen | horizon
    connection: str | None
    options: dict[str, str] = field(default_factory=dict)
    platform_grace: Value | None = None
    containers: int = 1  # replicas: how many hosts (containers) run it
    memory_limit: Value | None = None  # the container's hard memory limit (MB)
    # Options whose value came from a variable: option -> "where it was read" (say it, never
    # hide it: a default of ${VAR:-300} is the value only while nobody sets VAR).
    option_notes: dict[str, str] = field(default_factory=dict)
    # The unit the platform stops (a Compose service's key line, a container, `[program:x]`,
    # `[Service]`); a script's worker gets its runner's when tie() finds one.
    unit: Source | None = None
    named_for_development: bool = False  # a script's worker whose file name says "local"...
    stop_signal: Setting | None = None  # the signal set for it, where the project sets one

    def stop_site(self) -> Source:
        """Where a finding about this worker's stop grace belongs (CONVENTION.md): the line
        that sets the grace, else the unit's key line, else the command."""
        grace = self.platform_grace
        if grace is not None and grace.source.path:
            return grace.source
        return self.unit or self.source

    @property
    def queues(self) -> tuple[str, ...] | None:
        raw = self.options.get("queue")
        return tuple(q.strip() for q in raw.split(",") if q.strip()) if raw else None


def find_artisan(argv: list[str]) -> tuple[str, str | None, dict[str, str]] | None:
    """(command, connection, options) of the first `artisan queue:work|horizon` in argv."""
    tokens = expand(argv)
    for i, token in enumerate(tokens[:-1]):
        if os.path.basename(token) == "artisan" and (command := _command(tokens[i + 1])):
            connection, options = _options(tokens[i + 2 :])
            return command, connection, options
    return None


def _command(word: str) -> str | None:
    """A worker command, or a project's wrapper named after one (`queue:work-resilient`,
    `queue:work:tenants`): read as the command it wraps, whose options it takes."""
    if word in COMMANDS:
        return word
    base = next((c for c in COMMANDS if c.startswith("queue:") and word.startswith(c)), None)
    return base if base and word[len(base) : len(base) + 1] in ("-", ":") else None


def expand(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if any(c.isspace() for c in token.strip()):
            try:
                out.extend(expand(shlex.split(token, comments=True)))
            except ValueError:
                out.extend(token.split())
        else:
            out.append(token)
    return out


def _options(tokens: list[str]) -> tuple[str | None, dict[str, str]]:
    connection = None
    options: dict[str, str] = {}
    i = 0
    while i < len(tokens) and tokens[i] not in SEPARATORS:
        token = tokens[i]
        if REDIRECTION.match(token):
            break  # `>/proc/1/fd/1 2>&1`: the shell's, not the command's
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if (
                not eq
                and name not in FLAGS
                and i + 1 < len(tokens)
                and not tokens[i + 1].startswith("-")
            ):
                value = tokens[i + 1]
                i += 1
            options[name] = value
        elif not token.startswith("-") and connection is None:
            connection = token
        i += 1
    return connection, options


Found = tuple[str, str | None, dict[str, str]]
Finder = Callable[[list[str]], Found | None]

_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def expand_known(text: str, env: Mapping[str, str]) -> str:
    """${X} and $X replaced where `env` has X; the rest left as written."""
    return _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)

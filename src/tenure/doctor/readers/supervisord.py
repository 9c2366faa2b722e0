"""supervisord: `stopwaitsecs` (default 10 s), `stopsignal` (TERM), `stopasgroup` and
`killasgroup` (both false: the final SIGKILL reaches the worker but not its job processes)."""

from __future__ import annotations

from tenure.doctor.model import Setting, Source, Value
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.ini import Entry, read_ini, section_line
from tenure.doctor.readers.units import seconds, signal_name
from tenure.doctor.readers.worker_command import find_worker, make_launch, split_command

DEFAULT_STOPWAITSECS = 10.0
TRUE = {"true", "yes", "on", "1"}


def looks_like_supervisord(text: str) -> bool:
    return "[program:" in text


def read_supervisord(path: str, text: str) -> ReadResult:
    result = ReadResult(understood=True)
    programs: dict[str, dict[str, Entry]] = {}
    for entry in read_ini(text, backslash_continues=False):
        if entry.section.startswith("program:"):
            programs.setdefault(entry.section[len("program:") :], {})[entry.key] = entry
    for name, keys in programs.items():
        command = keys.get("command")
        if command is None:
            continue
        # supervisord expands %(ENV_X)s itself; turn it into ${X} for the shared reader.
        text_command = command.value.replace("%(ENV_", "${").replace(")s", "}")
        args = find_worker(split_command(text_command))
        if args is None:
            continue
        result.launches.append(
            make_launch(
                platform="supervisord",
                name=name,
                source=Source(path, command.line),
                args=args,
                platform_grace=_grace(path, keys),
                stop_signal=_signal(path, keys),
                orphans_children=_orphans(path, keys),
                unit=Source(path, section_line(text, f"program:{name}")),
            )
        )
    return result


def _grace(path: str, keys: dict[str, Entry]) -> Value | None:
    entry = keys.get("stopwaitsecs")
    if entry is None:
        at = Source(note="supervisord default")
        return Value("supervisord stopwaitsecs", DEFAULT_STOPWAITSECS, "s", at)
    amount = seconds(entry.value)
    if amount is None:
        return None
    return Value("supervisord stopwaitsecs", amount, "s", Source(path, entry.line))


def _signal(path: str, keys: dict[str, Entry]) -> Setting:
    entry = keys.get("stopsignal")
    if entry is None:
        return Setting("supervisord stopsignal", "SIGTERM", Source(note="supervisord default"))
    name = signal_name(entry.value) or entry.value
    return Setting("supervisord stopsignal", name, Source(path, entry.line))


def _orphans(path: str, keys: dict[str, Entry]) -> Setting | None:
    group = [keys[k] for k in ("stopasgroup", "killasgroup") if k in keys]
    if any(e.value.strip().lower() in TRUE for e in group):
        return None
    at = Source(path, group[0].line) if group else Source(note="supervisord default")
    return Setting("supervisord killasgroup", "false", at)

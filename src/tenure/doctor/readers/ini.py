"""A line-keeping reader for the INI dialects of systemd units and supervisord configs.

configparser forgets line numbers and rejects what systemd accepts (repeated keys, backslash
continuations), so this small reader keeps both and never raises.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    section: str
    key: str
    value: str
    line: int


def section_line(text: str, section: str) -> int | None:
    """The line of `[section]`: where a unit's findings go when none of its keys sets the
    value they are about (the platform's default applies to the whole section)."""
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if (
            stripped.startswith("[")
            and stripped.endswith("]")
            and stripped[1:-1].strip() == section
        ):
            return number
    return None


def read_ini(text: str, *, backslash_continues: bool) -> list[Entry]:
    """Entries in file order. systemd continues a line ending in `\\`; supervisord (like
    configparser) continues a line indented deeper than its key's line, so a program whose
    keys are all indented alike (`    command=...` then `    stopwaitsecs = 600`) keeps them."""
    entries: list[Entry] = []
    section = ""
    key_indent: int | None = None  # the last key's indentation; None after a section header
    pending: tuple[str, str, int] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if pending is not None and backslash_continues:
            key, value, first = pending
            value = value + " " + line.strip()
            if value.endswith("\\"):
                pending = (key, value[:-1].rstrip(), first)
                continue
            entries.append(Entry(section, key, value.strip(), first))
            pending = None
            continue
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        indent = len(raw) - len(raw.lstrip())
        if not backslash_continues and key_indent is not None and indent > key_indent:
            last = entries[-1]
            entries[-1] = Entry(last.section, last.key, f"{last.value} {stripped}", last.line)
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key_indent = stripped[1:-1].strip(), None
            continue
        if "=" not in stripped:
            continue
        key, _, value = stripped.partition("=")
        value = value.strip()
        if not backslash_continues and " ;" in value:
            value = value.split(" ;", 1)[0].rstrip()  # supervisord's inline comment
        if backslash_continues and value.endswith("\\"):
            pending = (key.strip(), value[:-1].rstrip(), number)
            continue
        entries.append(Entry(section, key.strip(), value, number))
        key_indent = indent
    if pending is not None:
        entries.append(Entry(section, pending[0], pending[1].strip(), pending[2]))
    return entries

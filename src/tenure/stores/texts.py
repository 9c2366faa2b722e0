"""Text a store records as it is given (an attempt's error and traceback), made storable on
every backend: the same record read back everywhere, never an end refused for its text.

A job's own words can hold what a store cannot encode: a NUL (PostgreSQL's text type refuses
it) or a lone surrogate (no UTF-8 encoder takes it: SQLite, psycopg and redis-py all raise).
Left as they are, the end's write fails, the worker takes that for a store outage, and the
attempt is later recorded as `crashed` and retried, for a text. They are escaped instead
(`\\x00`, `\\ud800`), on every backend alike: a NUL shows nothing in a terminal anyway.

Texts are also capped, head and tail with the size between them: a 5 MB message repeated on
every attempt fills the store, and its start and its end are what a person reads.
"""

from __future__ import annotations

ERROR_MAX_CHARS = 16_384
TRACEBACK_MAX_CHARS = 65_536


def storable(text: str) -> str:
    """`text` with NULs and lone surrogates escaped as Python writes them (`\\x00`,
    `\\ud800`); everything else kept as it is."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def capped(text: str, limit: int) -> str:
    """`text` if it is at most `limit` characters, else its head and tail with what was cut
    named between them (the whole text's size included)."""
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit:,} of {len(text):,} characters cut here ...]\n"
    keep = max(limit - len(note), 0)
    head = keep // 2
    return text[:head] + note + text[len(text) - (keep - head) :]


def recorded(error: str, traceback: str | None) -> tuple[str, str | None]:
    """An attempt's error and traceback as a store records them: escaped, then capped (an
    escape is plain ASCII, so a cut through one stays storable, and the cap is a bound)."""
    error = capped(storable(error), ERROR_MAX_CHARS)
    if traceback is not None:
        traceback = capped(storable(traceback), TRACEBACK_MAX_CHARS)
    return error, traceback

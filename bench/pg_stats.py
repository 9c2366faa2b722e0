"""PostgreSQL's planner statistics as a production server holds them (issue 17).

This machine's PostgreSQL runs with autovacuum off, so a plain phase measures every system on
tables without statistics. With autovacuum on, a table is ANALYZEd whenever enough of it
changed: right after a burst of enqueues (every job queued, no attempt yet), and after a drain
(nearly every job finished). Two more drain phases put the database in those states:

- `one-analyzed`: ANALYZE of the whole database right after the measured enqueue;
- `one-drained`: a first drain of `jobs // 5` jobs, ANALYZE, then the measured enqueue.

Standard library and psycopg only: it runs in each system's own venv.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

# layout -> the state its drain is measured in
STATES = {"one-analyzed": "burst", "one-drained": "drained"}
LAYOUTS = tuple(STATES)


def base_layout(layout: str) -> str:
    """The worker arrangement of a layout: both states run the `one` workers."""
    return "one" if layout in STATES else layout


def analyze(url: str) -> None:
    """ANALYZE every table of the database `url` names (tenure's own URL options dropped)."""
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(urlunsplit(parts._replace(query="")), autocommit=True) as conn:
        conn.execute("ANALYZE")

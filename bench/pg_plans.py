"""The plan tenure's PostgreSQL worker runs for its hot path, for bench/REPORT.md.

psycopg prepares a statement after a few executions and PostgreSQL then settles on a generic
plan, made from the statistics it holds at that time: that plan is what a drain runs. This
prints it for the success-and-claim statement (stores/postgres/claims.py), forced generic, on
the benchmark's own database in the state a phase left it.
"""

from __future__ import annotations

import re
from typing import Any

# Values for the statement's parameters (EXPLAIN without ANALYZE runs nothing).
VALUES: dict[str, tuple[str, Any]] = {
    "id": ("text", "bench-explain"),
    "token": ("int", 0),
    "queue": ("text", "default"),
    "seen": ("text[]", []),
    "limit": ("int", 1),
    "lease": ("float8", 30.0),
    "worker": ("text", "w-bench-explain"),
    "host": ("text", "bench"),
    "pid": ("int", 1),
    "result": ("text", None),
    "channel": ("text", "tenure_bench_explain"),
}


def generic_plan(store: Any) -> str | None:
    """EXPLAIN of COMPLETE_AND_CLAIM as a generic plan; None off PostgreSQL."""
    db = getattr(store, "db", None)
    if db is None or not hasattr(db, "q"):
        return None
    from psycopg import sql

    from tenure.stores.postgres import claims

    text = db.q(claims.COMPLETE_AND_CLAIM)
    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", text)))
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", text)
    types = ", ".join(VALUES[n][0] for n in names)
    with db.connection() as conn, conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE bench_explain({types}) AS {numbered}")
        values = sql.SQL(", ").join(sql.Literal(VALUES[n][1]) for n in names).as_string(conn)
        rows = conn.execute(f"EXPLAIN (COSTS OFF) EXECUTE bench_explain({values})").fetchall()
        conn.execute("DEALLOCATE bench_explain")
    return "\n".join(str(next(iter(row.values()))) for row in rows)

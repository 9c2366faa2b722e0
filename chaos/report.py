"""chaos/results/*.json -> chaos/REPORT.md: one table per backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.harness import BACKENDS

HEADER = (
    "| scenario | profile | jobs | faults injected | lost | unexplained duplicates | "
    "explained re-runs | recovery p50 / p99 | re-run p50 / p99 | fenced | other findings | "
    "wall |\n|---|---|---:|---:|---:|---:|---:|---|---|---:|---|---:|\n"
)


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def _row(r: dict[str, Any]) -> str:
    if "unavailable" in r:
        return (
            f"| {r['scenario']} | {r.get('profile', '')} | - | - | - | - | - | - | - | - | "
            f"not run: {r['unavailable'][:160]} | - |\n"
        )
    findings = []
    if r["unmatched"]:
        findings.append(f"{r['unmatched']} executions without a matching attempt")
    if r["effects_twice"]:
        findings.append(f"{r['effects_twice']} once() effects twice")
    if r["overlapping"]:
        findings.append(f"{r['overlapping']} runs overlapped a paused one")
    if r["reruns_without_fault"]:
        findings.append(f"{r['reruns_without_fault']} re-runs with no fault on that process")
    findings += [f"**{p}**" for p in r.get("problems", [])[:3]]
    findings += [n for n in r.get("notes", [])[:2] if not n.startswith("corrupt ")]
    verdict = "" if r["ok"] else " **FAIL**"
    return (
        f"| {r['scenario']}{verdict} | {r.get('profile', '')} | {r['jobs']} | {r['faults']} | "
        f"{r['lost']} | {r['unexplained_duplicates']} | {r['explained_reruns']} | "
        f"{_s(r['recovery_p50_s'])} / {_s(r['recovery_p99_s'])} | "
        f"{_s(r['rerun_p50_s'])} / {_s(r['rerun_p99_s'])} | {r['fenced']} | "
        f"{'; '.join(findings).replace('|', '/')} | {r['wall_s']:.0f} s |\n"
    )


FINDINGS = """## Bugs this suite found in tenure, all fixed (tests/chaos keeps them fixed)

1. **A stray attempt row stopped a whole queue** (SQLite, then PostgreSQL): an attempt row at a
   job's next number made the reservation's INSERT fail and roll back every reservation of the
   queue. Fixed: the next attempt number skips past every existing row, and on SQLite each job
   is reserved and rescued in a savepoint of its own (a damaged row fails only its job).
2. **One damaged policy stopped every rescue** (SQLite): a policy of the wrong types raised in
   the slot (leaving the attempt open) and then in `decide()`, rolling back the whole rescue.
   Fixed: policies are type-checked (NaN timeouts refused) and fall back to the defaults; a slot
   error fails its attempt at once.
3. **Deeply nested JSON escaped as RecursionError** from decoding and from dispatch. Fixed: it
   is a PayloadError with a reason.
4. **`tenure ... --url` crashed with a traceback** for an unusable store (a bad SQLite URL, a
   missing directory, an unreachable server), and **a job id with a NUL byte** raised
   psycopg.DataError on PostgreSQL. Fixed: every command exits 2 with the message; such an id
   is "no such job".
5. **A Sentinel failover undid acknowledged writes** (Redis Sentinel, `sentinel-failover`
   before the fix): replication is asynchronous and a manually failed-over master keeps
   accepting writes until Sentinel demotes it, so 3 failovers under load lost 550 of 1,500
   jobs (dispatched, then gone), ran 54 jobs twice with no attempt row to say why, and did 16
   once() effects twice. Fixed: `wait_replicas=N` (1 by default on `redis+sentinel://`) puts a
   `WAIT N` after every script on the same connection, and a write the replica did not confirm
   is reported as StoreUnavailable (retried), so the promoted replica holds every write tenure
   reported done: the same scenario since, 0 lost and 0 unexplained.

Seen and kept, by design: a worker paused past its lease runs up to ~0.2 s of job code after
SIGCONT before its supervisor kills the attempt (the job's `once()` effects are refused then);
dict keys that are not strings become strings at dispatch (JSON), tuples become lists; a row
with an unknown state stays out of every queue (PostgreSQL's schema refuses such a state).
"""


def aof_window(rows: list[dict[str, Any]]) -> str:
    """The section `python -m chaos aof-window` measured, if it ran."""
    found = [r for r in rows if r.get("scenario") == "aof-everysec-window"]
    if not found:
        return ""
    r = found[0]
    return (
        "## Redis AOF `everysec`: writes lost when redis-server is SIGKILLed\n\n"
        f"`python -m chaos aof-window --trials {r['trials']}` (chaos/aof_window.py): one Lua "
        f"script per write, {r['writes_per_s_median']:,} acknowledged writes/s, redis-server "
        "SIGKILLed at a random moment, restarted on its AOF. Lost acknowledged writes: "
        f"**{r['lost_writes_total']}** in {r['trials']} kills (window "
        f"{r['window_ms_max']} ms at most). The control (no persistence) lost "
        f"{r['control_no_persistence_lost']:,} of {r['control_no_persistence_acknowledged']:,}: "
        "the instrument sees losses when there are some. Redis writes the AOF before it "
        "replies, so a killed process loses nothing; what `everysec` risks is the last "
        "second (two if an fsync stalls) on a lost *machine*, which this cannot induce.\n\n"
    )


def write_report(results: Path, out: Path) -> Path:
    rows = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    text = [
        "# tenure chaos report\n\n",
        "Generated by `python -m chaos report` from `chaos/results/*.json` (written by "
        "`python -m chaos run`). Every number comes from reconciling an independent ledger "
        "(one O_APPEND line per job execution: job id, attempt, pid, parent pid) with the "
        "store's attempts; see chaos/checker.py for the definitions.\n\n",
        "- **lost**: dispatched jobs not in their expected final state (missing, stuck, or failed "
        "when they should have succeeded).\n",
        "- **unexplained duplicates**: executions beyond the last whose attempt did not end "
        "crashed/timed_out/interrupted/lost_lease/failed, or one attempt executed twice.\n",
        "- **explained re-runs**: executions followed by another whose attempt records why.\n",
        "- **recovery**: from the fault to the store recording the attempt's end (the job is "
        "back in its queue); **re-run**: to the next execution starting (queue wait "
        "included).\n",
        "- **fenced**: late results refused by the fencing token and recorded on the attempt.\n\n",
        FINDINGS,
    ]
    text.append(aof_window(rows))
    for backend in BACKENDS:
        mine = [r for r in rows if r.get("backend") == backend]
        if not mine:
            continue
        text.append(f"## {backend}\n\n")
        text.append(HEADER)
        text.extend(_row(r) for r in mine)
        corrupt = [r for r in mine if r["scenario"] == "corrupt-rows" and "notes" in r]
        for r in corrupt:
            text.append("\nCorrupted rows, and how each damaged job ended:\n\n")
            text.extend(
                f"- {n.removeprefix('corrupt ')}\n" for n in r["notes"] if n.startswith("corrupt ")
            )
        text.append("\n")
    out.write_text("".join(text))
    return out

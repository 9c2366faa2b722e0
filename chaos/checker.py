"""Reconcile the ledger (what really ran) with the store (what tenure recorded).

Findings, per the issue:
- lost: dispatched jobs that did not end in the state expected of them (missing, stuck, or
  failed when they should have succeeded);
- unmatched: executions with no attempt row of that number run by that process;
- unexplained duplicates: an execution that is not the job's last and whose attempt did not
  end as crashed/timed_out/interrupted/lost_lease/failed, or two executions of one attempt;
- effects twice: a `once()` effect the ledger saw performed more than once for one job.
Also measured: explained re-runs, re-runs whose attempt's process was never hit by a fault
(suspicious: the promise is that a live worker keeps its lease), executions that overlapped
in time, late results refused by fencing, and recovery time from a fault to the re-run.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tenure.stores.base import get_job

from chaos.ledger import Execution, by_job

EXPLAINED = frozenset({"crashed", "timed_out", "interrupted", "lost_lease", "failed"})
FINAL = frozenset({"succeeded", "failed", "cancelled"})
SAMPLES = 5


@dataclass
class Verdict:
    jobs: int = 0
    executions: int = 0
    faults: int = 0
    lost: int = 0
    unmatched: int = 0
    unexplained_duplicates: int = 0
    effects_twice: int = 0
    explained_reruns: int = 0
    reruns_without_fault: int = 0
    overlapping: int = 0
    fenced: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    recovery_s: list[float] = field(default_factory=list)
    rerun_s: list[float] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)
    # a scenario's own expectations that did not hold (a worker died of a job, ...)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.unmatched
            or self.unexplained_duplicates
            or self.effects_twice
            or self.problems
        )

    def note(self, kind: str, text: str) -> None:
        bucket = self.examples.setdefault(kind, [])
        if len(bucket) < SAMPLES:
            bucket.append(text)

    def percentile(self, q: float, data: list[float] | None = None) -> float | None:
        data = sorted(self.recovery_s if data is None else data)
        if not data:
            return None
        if len(data) == 1:
            return data[0]
        return statistics.quantiles(data, n=100, method="inclusive")[int(q) - 1]

    def summary(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("recovery_s")
        out.pop("rerun_s")
        out["recovery_p50_s"] = self.percentile(50)
        out["recovery_p99_s"] = self.percentile(99)
        out["rerun_p50_s"] = self.percentile(50, self.rerun_s)
        out["rerun_p99_s"] = self.percentile(99, self.rerun_s)
        out["recoveries"] = len(self.recovery_s)
        out["ok"] = self.ok
        return out


def check(
    store: Any,
    dispatched: dict[str, str],
    runs: list[Execution],
    faults: list[dict[str, Any]],
    faulty: set[str] | frozenset[str] = frozenset(),
) -> Verdict:
    """`dispatched`: job id -> the final state expected of it ("succeeded" or "failed");
    `faulty`: jobs whose every execution is itself the fault (counted as one each)."""
    runs_of = by_job(runs)
    injected = len(faults) + sum(len(runs_of.get(j, [])) for j in faulty)
    v = Verdict(jobs=len(dispatched), executions=len(runs), faults=injected)
    hit: dict[int, list[float]] = {}
    for f in faults:
        for pid in f.get("pids", []):
            hit.setdefault(int(pid), []).append(float(f["at"]))
    outcomes: Counter[str] = Counter()
    for job_id in runs_of:
        if job_id not in dispatched:
            v.unmatched += len(runs_of[job_id])
            v.note("unmatched", f"{job_id}: executed but never dispatched by the generator")
    for job_id, expected in dispatched.items():
        record = get_job(store, job_id)
        if record is None:
            v.lost += 1
            v.note("lost", f"{job_id}: not in the store")
            continue
        if record.state != expected:
            v.lost += 1
            v.note("lost", f"{job_id}: {record.state}, expected {expected}: {record.last_error}")
        attempts = {a.number: a for a in record.attempts}
        for a in record.attempts:
            outcomes[a.outcome or "open"] += 1
            if a.error and "refused (fencing)" in a.error:
                v.fenced += 1
        _check_job(v, job_id, runs_of.get(job_id, []), attempts, record, hit, job_id in faulty)
    v.outcomes = dict(sorted(outcomes.items()))
    return v


def _check_job(
    v: Verdict,
    job_id: str,
    execs: list[Execution],
    attempts: dict[int, Any],
    record: Any,
    hit: dict[int, list[float]],
    self_faulting: bool = False,
) -> None:
    execs = sorted(execs, key=lambda e: (e.attempt, e.started))
    per_attempt = Counter(e.attempt for e in execs)
    for number, n in per_attempt.items():
        if n > 1:
            v.unexplained_duplicates += n - 1
            v.note("unexplained", f"{job_id}: attempt {number} executed {n} times")
    succeeded = [e for e in execs if _outcome(attempts, e) == "succeeded"]
    if len(succeeded) > 1:
        v.unexplained_duplicates += len(succeeded) - 1
        v.note("unexplained", f"{job_id}: {len(succeeded)} executions of succeeded attempts")
    for i, e in enumerate(execs):
        a = attempts.get(e.attempt)
        if a is None or a.outcome == "deferred" or a.pid not in (e.pid, e.ppid):
            v.unmatched += 1
            v.note(
                "unmatched",
                f"{job_id}: execution of attempt {e.attempt} by pid {e.pid}/{e.ppid} has no "
                f"matching attempt row ({'none' if a is None else f'{a.outcome} pid {a.pid}'})",
            )
            continue
        last = i == len(execs) - 1
        if a.outcome in (None, "succeeded") and not last:
            if per_attempt[e.attempt] == 1 and a.outcome == "succeeded" and len(succeeded) <= 1:
                # ran again after a recorded success: nothing explains the later execution
                v.unexplained_duplicates += 1
                v.note("unexplained", f"{job_id}: re-run after attempt {e.attempt} succeeded")
            elif a.outcome is None:
                v.unexplained_duplicates += 1
                v.note("unexplained", f"{job_id}: attempt {e.attempt} never ended but re-ran")
            continue
        if not last:
            if a.outcome in EXPLAINED:
                v.explained_reruns += 1
            else:
                v.unexplained_duplicates += 1
                v.note("unexplained", f"{job_id}: attempt {e.attempt} {a.outcome} then re-run")
            nxt = execs[i + 1]
            seen = max(e.last_seen, e.ended or 0.0)
            if nxt.started < seen:
                v.overlapping += 1
                v.note(
                    "overlapping",
                    f"{job_id}: attempt {nxt.attempt} started {seen - nxt.started:.2f} s before "
                    f"attempt {e.attempt} ({a.outcome}) last wrote",
                )
            fault_at = _fault_time(hit, e, nxt)
            if fault_at is None:
                if self_faulting:
                    pass
                elif a.outcome in ("crashed", "lost_lease", "interrupted"):
                    v.reruns_without_fault += 1
                    v.note(
                        "without_fault",
                        f"{job_id}: attempt {e.attempt} {a.outcome} with no fault on pid "
                        f"{e.pid}/{e.ppid}: {a.error}",
                    )
                fault_at = seen
            # recovery: from the fault to the store recording the attempt's end (the job is
            # back in its queue); re-run: to the next execution starting (queue wait included).
            # A crash the sweep rescued is dated at its last heartbeat, before the fault: the
            # attempt does not say when it was rescued, so only the re-run measures it.
            if a.ended_at is not None and a.ended_at >= fault_at:
                v.recovery_s.append(a.ended_at - fault_at)
            v.rerun_s.append(max(0.0, nxt.started - fault_at))
    effects = sum(e.effects for e in execs)
    if effects > 1:
        v.effects_twice += 1
        v.note("effects_twice", f"{job_id}: once('effect') performed {effects} times")
    recorded = [x for x in getattr(record, "effects", []) if x.key == "effect"]
    for e in execs:
        if e.effects and recorded and recorded[0].attempt != e.attempt:
            v.effects_twice += 1
            v.note(
                "effects_twice",
                f"{job_id}: attempt {e.attempt} performed the effect the store gives to "
                f"attempt {recorded[0].attempt}",
            )


def _outcome(attempts: dict[int, Any], e: Execution) -> str | None:
    a = attempts.get(e.attempt)
    return None if a is None else a.outcome


def _fault_time(hit: dict[int, list[float]], e: Execution, nxt: Execution) -> float | None:
    """When the fault that ended execution `e` struck: the latest one aimed at its process
    (the child or its supervisor) before the re-run started. A fault may predate the
    execution's first ledger line: a job already handed to a child starts after its
    supervisor was stopped."""
    times = [t for pid in (e.pid, e.ppid) for t in hit.get(pid, []) if t <= nxt.started]
    return max(times) if times else None

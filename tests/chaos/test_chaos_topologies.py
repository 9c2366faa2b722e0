"""The topology chaos scenarios (chaos/topologies.py) in a bounded form, each on its own
throwaway topology: worker SIGKILLs on a Redis Cluster, Sentinel failovers, a PostgreSQL
restart behind PgBouncer. Nothing lost, no unexplained duplicate, the faults really happened."""

from __future__ import annotations

from typing import Any

import pytest

from chaos import topologies  # noqa: F401  (registers the scenarios)
from chaos.harness import skip_or_fail
from chaos.scenarios import Unavailable, run_one

pytestmark = pytest.mark.slow

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("redis", "cluster-kill-storm", {"jobs": 400, "job_ms": 100}),
    ("redis", "sentinel-failover", {"jobs": 600, "failovers": 1, "every_s": 2.0}),
    (
        "postgres",
        "pgbouncer-restart",
        {"jobs": 600, "restarts": 1, "every_s": 1.0, "server_login_retry": 1},
    ),
]


@pytest.mark.parametrize(("backend", "scenario", "params"), CASES, ids=[c[1] for c in CASES])
def test_topology_scenario(
    backend: str, scenario: str, params: dict[str, Any], tmp_path: Any
) -> None:
    try:
        row = run_one(scenario, backend, dict(params), keep=tmp_path).row()
    except Unavailable as exc:
        skip_or_fail(str(exc))
    detail = {k: row[k] for k in ("notes", "problems", "examples", "outcomes")}
    assert row["faults"] > 0, "no fault was injected: the load ended first"
    assert row["lost"] == 0, detail
    assert row["unexplained_duplicates"] == 0, detail
    assert row["unmatched"] == 0, detail
    assert row["effects_twice"] == 0, detail
    assert not row["problems"], detail
    if scenario == "cluster-kill-storm":
        assert row["explained_reruns"] > 0, row

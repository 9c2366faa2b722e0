"""Issue 31: "chains, batches, periodic jobs and tenure.testing honour all of it". Chains and
batches are checked with real workers (tests/e2e/test_flow_acceptance.py); here, on a real
SQLite store, a periodic job's runs keep its concurrency (a run dispatched while another holds
the slot is parked, not run beside it), and tenure.testing's drain takes fair jobs in their
turns, as a worker does."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenure
from tenure import testing
from tenure.core.records import WorkerRef
from tenure.periodic import run_id

REF = WorkerRef(id="w", host="h", pid=1)


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    return tenure.App(f"sqlite:///{tmp_path / 't.db'}")


def test_a_periodic_jobs_runs_keep_its_concurrency(app: tenure.App) -> None:
    @app.periodic("* * * * *", concurrency=1)
    def sweep() -> None: ...

    app.store.migrate()
    app.claim_periodic(sweep.name, 1_800_000_000.0, run=True)  # the first seen: recorded only
    dues = (1_800_000_060.0, 1_800_000_120.0)
    assert [app.claim_periodic(sweep.name, d, run=True) for d in dues] == ["dispatched"] * 2
    first, second = (run_id(sweep.name, d) for d in dues)
    got = app.store.reserve(queues=["default"], worker=REF, lease=30, limit=5)
    assert [r.job_id for r in got] == [first]  # the second run waits its turn
    info = app.get_job(second)
    assert info.state == "queued" and info.waiting_on is not None


def test_a_periodic_job_without_a_limit_runs_both_the_twin(app: tenure.App) -> None:
    @app.periodic("* * * * *")
    def sweep() -> None: ...

    app.store.migrate()
    app.claim_periodic(sweep.name, 1_800_000_000.0, run=True)  # the first seen: recorded only
    dues = (1_800_000_060.0, 1_800_000_120.0)
    assert [app.claim_periodic(sweep.name, d, run=True) for d in dues] == ["dispatched"] * 2
    ids = [run_id(sweep.name, d) for d in dues]
    got = app.store.reserve(queues=["default"], worker=REF, lease=30, limit=5)
    assert sorted(r.job_id for r in got) == sorted(ids)


def test_testing_drain_takes_fair_jobs_in_their_turns(app: tenure.App) -> None:
    order: list[str] = []

    @app.job(fair_key=lambda tenant, n: tenant)
    def import_row(tenant: str, n: int) -> None:
        order.append(tenant)

    import_row.dispatch_many([("big", n) for n in range(30)])
    import_row.dispatch_many([("small", n) for n in range(3)])
    testing.drain(app)
    assert len(order) == 33
    assert order[:6].count("small") == 3, order  # turns about, not behind big's 30


def test_testing_inline_honours_debounce(app: tenure.App) -> None:
    seen: list[int] = []

    @app.job(debounce=5, debounce_key=lambda doc, version: doc)
    def reindex(doc: int, version: int) -> None:
        seen.append(version)

    clock = testing.freeze(app)
    with testing.inline(app):
        handles = [reindex.dispatch(1, v) for v in range(3)]
        assert seen == []  # inside the window: nothing ran yet
        clock.advance(6)
        testing.drain(app)
    assert seen == [2] and len({h.id for h in handles}) == 1

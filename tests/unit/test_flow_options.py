"""The flow-control options of `@app.job` (issue 31): concurrency=, concurrency_key=,
debounce=, debounce_key=. Bad settings fail at definition, a bad key function at dispatch,
with nothing stored; the dispatch path carries the keys to the store."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenure
from tenure import testing
from tenure.core.errors import ConfigError
from tenure.core.records import WorkerRef


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    return tenure.App(f"sqlite:///{tmp_path / 't.db'}")


def test_bad_settings_fail_at_definition(app: tenure.App) -> None:
    def f(account: str) -> None: ...

    for settings, message in (
        ({"concurrency": 0}, "concurrency: expected an int >= 1, got 0"),
        ({"concurrency": True}, "concurrency: expected an int >= 1, got True"),
        ({"concurrency_key": lambda a: a}, "concurrency_key= needs concurrency="),
        ({"debounce": -1}, r"debounce: expected seconds > 0, got -1"),
        ({"debounce_key": lambda a: a}, "debounce_key= needs debounce="),
        ({"concurrency": 2, "concurrency_key": "account"}, "concurrency_key: expected a key"),
    ):
        with pytest.raises(ConfigError, match=message):
            app.job(name="f", **settings)(f)  # type: ignore[call-overload]


def test_a_bad_key_function_fails_the_dispatch_and_stores_nothing(app: tenure.App) -> None:
    @app.job(concurrency=2, concurrency_key=lambda account: account["id"])
    def sync(account: object) -> None: ...

    @app.job(debounce=5, debounce_key=lambda doc: doc)
    def reindex(doc: object) -> None: ...

    with pytest.raises(ConfigError, match=r"its concurrency_key function failed.*TypeError"):
        sync.dispatch("acme")
    with pytest.raises(ConfigError, match=r"must return text .* got list"):
        reindex.dispatch([1, 2])
    with pytest.raises(ConfigError, match=r"must return text .* got NoneType"):
        reindex.dispatch(None)
    assert sum(app.counts().values()) == 0


def test_debounced_dispatches_share_one_handle_and_the_last_arguments(app: tenure.App) -> None:
    @app.job(debounce=5, debounce_key=lambda doc_id, version: doc_id)
    def reindex(doc_id: int, version: int) -> None: ...

    handles = [reindex.dispatch(7, v) for v in range(5)]
    other = reindex.dispatch(8, 0)
    assert {h.id for h in handles} == {handles[0].id} and other.id != handles[0].id
    info = app.get_job(handles[0].id)
    assert '"args":[7,4]' in info.payload.replace(" ", "") and info.state == "scheduled"


def test_a_parked_job_reads_as_waiting_on_its_key(app: tenure.App) -> None:
    @app.job(name="sync", concurrency=1, concurrency_key=lambda account: account)
    def sync(account: str) -> None: ...

    first, second = sync.dispatch("acme"), sync.dispatch("acme")
    ref = WorkerRef(id="w", host="h", pid=1)
    assert [r.job_id for r in app.store.reserve(queues=["default"], worker=ref, lease=30)] == [
        first.id
    ]
    assert app.store.reserve(queues=["default"], worker=ref, lease=30) == []
    info = app.get_job(second.id)
    assert info.state == "queued" and info.waiting_on == "sync:acme"


def test_tenure_testing_drain_honours_concurrency_and_debounce(app: tenure.App) -> None:
    seen: list[tuple[str, int]] = []

    @app.job(name="sync2", concurrency=1, concurrency_key=lambda account, n: account)
    def sync2(account: str, n: int) -> None:
        seen.append((account, n))

    @app.job(name="reindex2", debounce=5, debounce_key=lambda doc, version: doc)
    def reindex2(doc: int, version: int) -> None:
        seen.append(("doc", version))

    sync2.dispatch_many([("a", 1), ("a", 2), ("b", 1)])
    handles = [reindex2.dispatch(1, v) for v in range(3)]
    clock = testing.freeze(app)
    testing.drain(app)  # the limited jobs run one after another; the debounced one waits
    assert sorted(seen) == [("a", 1), ("a", 2), ("b", 1)]
    clock.advance(6)
    testing.drain(app)
    assert seen[-1] == ("doc", 2) and len(seen) == 4
    assert app.get_job(handles[0].id).state == "succeeded"


def test_fair_key_settings_and_dispatch(app: tenure.App) -> None:
    def f(tenant: str, row: int) -> None: ...

    with pytest.raises(ConfigError, match="fair_weights= needs fair_key="):
        app.job(name="f", fair_weights={"a": 2})(f)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match=r"fair_weights: expected a dict of key -> weight > 0"):
        app.job(name="f", fair_key=lambda t, r: t, fair_weights={"a": 0})(f)  # type: ignore[call-overload]

    @app.job(name="import_row", fair_key=lambda tenant, row: tenant, fair_weights={"big": 3})
    def import_row(tenant: object, row: int) -> None: ...

    import_row.dispatch_many([("big", n) for n in range(6)] + [("small", n) for n in range(2)])
    ref = WorkerRef(id="w", host="h", pid=1)
    got = app.store.reserve(queues=["default"], worker=ref, lease=30, limit=8)
    tenants = [app.get_job(r.job_id).payload.split('"')[3] for r in got]
    assert tenants.index("small") < 3  # the small tenant's turn comes early
    assert [app.get_job(r.job_id).state for r in got] == ["running"] * 8
    with pytest.raises(ConfigError, match=r"its fair_key function must return text"):
        import_row.dispatch(None, 1)

"""Chains: each link is queued by the store in the same transaction/script that records the
previous link's success; a link that fails for good (or is cancelled) stops the chain, the
later links end cancelled, catch is queued once and finally once whatever the ending."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import tenure
from conformance.helpers import W1, W2, counts, expire_and_rescue, job, reserve_one
from tenure.core import chains
from tenure.core.records import Ending
from tenure.stores import Store
from tenure.stores.base import get_job
from tenure.testing import drain


class Runs:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def names(self) -> list[str]:
        return [n for n, _ in self.calls]


@pytest.fixture
def runs() -> Runs:
    return Runs()


@pytest.fixture
def app(store_url: str, store: Store, runs: Runs) -> Iterator[tenure.App]:
    application = tenure.App(store_url)

    @application.job(name="fetch", backoff=0)
    def fetch(n: int) -> int:
        runs.calls.append(("fetch", (n,)))
        return n * 10

    @application.job(name="resize", backoff=0)
    def resize(size: int, factor: int = 1) -> int:
        runs.calls.append(("resize", (size, factor)))
        return size * factor

    @application.job(name="upload", backoff=0)
    def upload(size: int) -> dict[str, int]:
        runs.calls.append(("upload", (size,)))
        return {"uploaded": size}

    @application.job(name="step", backoff=0)
    def step(label: str) -> str:
        runs.calls.append(("step", (label,)))
        return label

    @application.job(name="broken", tries=1, backoff=0)
    def broken() -> None:
        runs.calls.append(("broken", ()))
        raise RuntimeError("the image is corrupt")

    @application.job(name="unique_step", backoff=0, unique=lambda n: n)
    def unique_step(n: int) -> None:
        runs.calls.append(("unique_step", (n,)))

    @application.job(name="alert", backoff=0)
    def alert() -> None:
        runs.calls.append(("alert", ()))

    @application.job(name="cleanup", backoff=0)
    def cleanup() -> None:
        runs.calls.append(("cleanup", ()))

    try:
        yield application
    finally:
        application.close()


def sig(app: tenure.App, name: str, *args: Any, **kwargs: Any) -> tenure.Sig:
    return app.get_definition(name).sig(*args, **kwargs)


def test_links_run_in_order_and_wait_gives_the_last_result(app: tenure.App, runs: Runs) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")],
        catch=sig(app, "alert"),
        finally_=sig(app, "cleanup"),
    )
    drain(app)
    assert runs.calls == [
        ("step", ("a",)),
        ("step", ("b",)),
        ("step", ("c",)),
        ("cleanup", ()),
    ]
    assert handle.wait(timeout=5) == "c"
    assert asyncio.run(handle.wait_async(timeout=5)) == "c"
    assert [app.get_job(h.id).state for h in handle.links] == ["succeeded"] * 3


def test_pass_result_gives_the_previous_result_as_the_first_argument(
    app: tenure.App, runs: Runs
) -> None:
    handle = app.chain(
        [sig(app, "fetch", 7), sig(app, "resize", factor=2), sig(app, "upload")],
        pass_result=True,
    )
    drain(app)
    assert runs.calls == [("fetch", (7,)), ("resize", (70, 2)), ("upload", (140,))]
    assert handle.wait(timeout=5) == {"uploaded": 140}


def test_a_passed_result_travels_with_the_next_link(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    """The store copies the result into the next link with the success: the previous link
    may be pruned (or forgotten) before the next one runs."""
    handle = app.chain([sig(app, "fetch", 7), sig(app, "upload")], pass_result=True)
    held = reserve_one(store)
    store.end_attempt(Ending(job_id=held.job_id, token=held.token, result="70"))
    assert app.forget(handle.links[0].id)
    drain(app)
    assert runs.calls == [("upload", (70,))]
    assert handle.links[1].wait(timeout=5) == {"uploaded": 70}


def test_a_link_takes_no_unique_key(app: tenure.App, runs: Runs) -> None:
    app.get_definition("unique_step").dispatch(1)  # holds the key 1
    handle = app.chain([sig(app, "unique_step", 1), sig(app, "step", "b")])
    assert app.get_job(handle.links[0].id).state == "queued"  # stored, not deduplicated
    drain(app)
    assert runs.names().count("unique_step") == 2 and handle.wait(timeout=5) == "b"


def test_results_are_not_passed_by_default(app: tenure.App, runs: Runs) -> None:
    app.chain([sig(app, "fetch", 1), sig(app, "fetch", 2)])
    drain(app)
    assert runs.calls == [("fetch", (1,)), ("fetch", (2,))]


def test_the_next_link_is_queued_by_the_success_itself(app: tenure.App, store: Store) -> None:
    handle = app.chain([sig(app, "step", "a"), sig(app, "step", "b")])
    first, second = (h.id for h in handle.links)
    held = reserve_one(store)
    assert held.job_id == first
    assert get_job(store, second) is None  # not before the success: nothing to run early
    ended, _ = store.end_attempt(Ending(job_id=first, token=held.token, result='"a"'))
    assert ended.accepted
    assert job(store, second).state == "queued"


def test_a_success_with_the_next_claim_in_one_call_queues_the_next_link(
    app: tenure.App, store: Store
) -> None:
    handle = app.chain([sig(app, "step", "a"), sig(app, "step", "b")])
    first, second = (h.id for h in handle.links)
    held = reserve_one(store)
    ended, nxt = store.end_attempt(
        Ending(job_id=first, token=held.token), queues=["default"], worker=W1, lease=30.0
    )
    assert ended.accepted
    if nxt is None:  # a store may leave the claim to reserve
        nxt = reserve_one(store)
    assert nxt.job_id == second


def test_a_stale_success_dispatches_nothing(app: tenure.App, store: Store) -> None:
    handle = app.chain([sig(app, "step", "a"), sig(app, "step", "b")])
    first, second = (h.id for h in handle.links)
    stale = reserve_one(store, lease=0.2)
    expire_and_rescue(store, first)  # crashed: it goes back to its queue (a try left)
    fresh = reserve_one(store, worker=W2)
    late, _ = store.end_attempt(Ending(job_id=first, token=stale.token, result='"a"'))
    assert not late.accepted
    assert get_job(store, second) is None
    ended, _ = store.end_attempt(Ending(job_id=first, token=fresh.token, result='"a"'))
    assert ended.accepted
    assert job(store, second).state == "queued"


def test_a_failed_link_stops_the_chain(app: tenure.App, runs: Runs) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), sig(app, "broken"), sig(app, "step", "c"), sig(app, "step", "d")],
        catch=sig(app, "alert"),
        finally_=sig(app, "cleanup"),
    )
    drain(app)
    assert sorted(runs.names()) == sorted(["step", "broken", "alert", "cleanup"])
    assert runs.names()[:2] == ["step", "broken"]
    states = [app.get_job(h.id).state for h in handle.links]
    assert states == ["succeeded", "failed", "cancelled", "cancelled"]
    later = app.get_job(handle.links[2].id)
    assert later.last_error is not None and "link 2/4 (broken) failed" in later.last_error
    assert later.attempts == []  # never ran
    shown = counts(app.store)
    assert (shown["succeeded"], shown["failed"], shown["cancelled"]) == (3, 1, 2)
    assert shown["queued"] == shown["running"] == 0
    with pytest.raises(tenure.JobFailed) as failed:
        handle.wait(timeout=5)
    assert failed.value.job_id == handle.links[1].id
    assert "the image is corrupt" in str(failed.value.error)
    drain(app)  # nothing more: catch and finally ran once
    assert runs.names().count("alert") == 1 and runs.names().count("cleanup") == 1


def test_a_failed_link_that_stopped_its_chain_is_not_retried(app: tenure.App) -> None:
    handle = app.chain([sig(app, "broken"), sig(app, "step", "b")], catch=sig(app, "alert"))
    drain(app)
    failed = handle.links[0].id
    assert not app.retry_failed(failed)
    assert "which stopped when it failed" in app.retry_refusal(failed)
    assert app.get_job(failed).state == "failed"


def test_a_chain_added_to_a_running_batch_is_one_member(app: tenure.App, runs: Runs) -> None:
    batch = app.batch([sig(app, "step", "solo")])
    assert app.add_to_batch(batch.id, [[sig(app, "step", "a"), sig(app, "step", "b")]]) == 1
    drain(app)
    info = app.get_batch(batch.id)
    assert (info.state, info.jobs, info.done) == ("succeeded", 2, 2)
    assert runs.names() == ["step", "step", "step"]


def test_cancelling_a_queued_link_stops_the_chain(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")],
        catch=sig(app, "alert"),
        finally_=sig(app, "cleanup"),
    )
    held = reserve_one(store)
    store.end_attempt(Ending(job_id=held.job_id, token=held.token, result='"a"'))
    assert app.cancel(handle.links[1].id).state == "cancelled"
    drain(app)
    assert sorted(runs.names()) == ["alert", "cleanup"]
    states = [app.get_job(h.id).state for h in handle.links]
    assert states == ["succeeded", "cancelled", "cancelled"]
    with pytest.raises(tenure.JobCancelled):
        handle.wait(timeout=5)


def test_cancelling_the_chain_cancels_its_live_link(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")],
        finally_=sig(app, "cleanup"),
    )
    held = reserve_one(store)
    store.end_attempt(
        Ending(job_id=held.job_id, token=held.token, outcome="succeeded", result='"a"')
    )
    done = handle.cancel()
    assert done is not None and (done.job_id, done.state) == (handle.links[1].id, "cancelled")
    drain(app)
    assert runs.names() == ["cleanup"]
    assert handle.cancel() is None  # it ended: nothing to cancel


def test_a_link_cancelled_while_it_runs_stops_the_chain(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    handle = app.chain([sig(app, "step", "a"), sig(app, "step", "b")], finally_=sig(app, "cleanup"))
    held = reserve_one(store)
    assert store.cancel(held.job_id).state == "running"
    store.end_attempt(
        Ending(job_id=held.job_id, token=held.token, outcome="cancelled", error="stopped")
    )
    assert app.get_job(handle.links[1].id).state == "cancelled"
    drain(app)
    assert runs.names() == ["cleanup"]


def test_a_link_whose_worker_vanished_for_good_stops_the_chain(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    handle = app.chain([sig(app, "broken"), sig(app, "step", "b")], catch=sig(app, "alert"))
    held = reserve_one(store, lease=0.2)
    assert held.job_id == handle.links[0].id
    expire_and_rescue(store, held.job_id)  # its only try: failed
    assert app.get_job(handle.links[0].id).state == "failed"
    assert app.get_job(handle.links[1].id).state == "cancelled"
    drain(app)
    assert runs.names() == ["alert"]


def test_every_link_shows_its_chain(app: tenure.App, store: Store) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")],
        finally_=sig(app, "cleanup"),
    )
    drain(app)
    ids = [h.id for h in handle.links]
    for position, link_id in enumerate(ids, start=1):
        shown = chains.info(job(store, link_id).chain_text)
        assert shown is not None and shown.id == handle.id
        assert shown.position == position
        assert [link.id for link in shown.links] == ids
        assert (shown.previous.id if shown.previous else None) == (
            ids[position - 2] if position > 1 else None
        )
        assert (shown.next.id if shown.next else None) == (ids[position] if position < 3 else None)
        assert shown.finally_id is not None


@pytest.mark.batches_across_queues
def test_links_may_use_different_queues(app: tenure.App, runs: Runs) -> None:
    handle = app.chain(
        [sig(app, "step", "a"), app.get_definition("step").options(queue="images").sig("b")],
        finally_=app.get_definition("cleanup").options(queue="mail").sig(),
    )
    drain(app, queues=["default", "images", "mail"])
    assert runs.names() == ["step", "step", "cleanup"]
    assert app.get_job(handle.links[1].id).queue == "images"
    assert handle.wait(timeout=5) == "b"


# -- a chain as one member of a batch -----------------------------------------------------------
def step_once(store: Store, seen: list[float] | None = None, batch_id: str = "") -> str | None:
    """Run one ready job through the store as a worker would: half way (its progress
    reported, the batch's progress noted in `seen`), then its success."""
    got = store.reserve(queues=["default"], worker=W1, lease=30.0, limit=1)
    if not got:
        return None
    if seen is not None:
        store.report_progress(job_id=got[0].job_id, token=got[0].token, fraction=0.5)
        seen.append(list_batch(store, batch_id).progress)
    store.end_attempt(Ending(job_id=got[0].job_id, token=got[0].token, result='"x"'))
    return got[0].job_id


def list_batch(store: Store, batch_id: str) -> Any:
    (found,) = store.list_batches(ids=[batch_id])
    return found


def test_a_chain_is_one_member_of_its_batch(app: tenure.App, store: Store, runs: Runs) -> None:
    batch = app.batch(
        [
            sig(app, "step", "solo"),
            tenure.Chain([sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")]),
        ],
        then=sig(app, "alert"),
    )
    assert (app.get_batch(batch.id).jobs, app.get_batch(batch.id).total) == (2, 2)
    seen: list[tuple[float, int, str]] = []
    progress: list[float] = []
    while step_once(store, progress, batch.id) is not None:
        info = app.get_batch(batch.id)
        seen.append((info.progress, info.done, info.state))
        progress.append(info.progress)
    assert progress == sorted(progress), f"batch progress went back: {progress}"
    # solo, a, b, c, then the batch's callback: the batch settled only after the last link
    assert [done for _, done, _ in seen] == [1, 1, 1, 2, 2]
    assert [state for _, _, state in seen][-2:] == ["succeeded", "succeeded"]
    info = app.get_batch(batch.id)
    assert (info.jobs, info.done, info.failed, info.progress) == (2, 2, 0, 1.0)
    assert info.then_job_id is not None and job(store, info.then_job_id).state == "succeeded"


def test_a_list_in_a_batch_is_a_chain_that_fails_as_one_member(app: tenure.App, runs: Runs) -> None:
    batch = app.batch(
        [
            sig(app, "step", "solo"),
            [sig(app, "step", "a"), sig(app, "broken"), sig(app, "step", "c")],
        ],
        allow_failures=True,
        finally_=sig(app, "cleanup"),
    )
    drain(app)
    info = app.get_batch(batch.id)
    assert (info.state, info.jobs, info.done, info.failed) == ("succeeded", 2, 1, 1)
    assert sorted(runs.names()) == ["broken", "cleanup", "step", "step"]


def test_cancelling_its_batch_stops_a_chain_between_links(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    chain = tenure.Chain(
        [sig(app, "step", "a"), sig(app, "step", "b"), sig(app, "step", "c")],
        catch=sig(app, "alert"),
        finally_=sig(app, "cleanup"),
    )
    batch = app.batch([chain])
    first = step_once(store)  # link a succeeded: b is queued, in the batch
    assert first is not None
    assert app.cancel_batch(batch.id)
    drain(app)
    assert sorted(runs.names()) == ["alert", "cleanup"]  # b and c never ran
    info = app.get_batch(batch.id)
    assert (info.state, info.jobs, info.cancelled) == ("cancelled", 1, 1)


def test_a_running_link_whose_batch_was_cancelled_stops_its_chain(
    app: tenure.App, store: Store, runs: Runs
) -> None:
    batch = app.batch([tenure.Chain([sig(app, "step", "a"), sig(app, "step", "b")])])
    held = reserve_one(store)
    assert app.cancel_batch(batch.id)
    ended, _ = store.end_attempt(Ending(job_id=held.job_id, token=held.token, result='"a"'))
    assert ended.accepted
    drain(app)
    assert runs.names() == []  # b never ran
    info = app.get_batch(batch.id)
    assert (info.state, info.jobs, info.cancelled, info.done) == ("cancelled", 1, 1, 0)

"""tenure.core.chains: the pure rules a store follows when a chain link ends."""

from __future__ import annotations

import json
from dataclasses import replace

from tenure.core import chains
from tenure.core.codec import callback_from_json, callback_to_json
from tenure.core.guards import NO_GUARDS, Guards
from tenure.core.records import NewJob
from tenure.core.retry import Policy


def link(job_id: str, queue: str = "default") -> NewJob:
    return NewJob(job_id, f"job_{job_id}", queue, '{"args":[],"kwargs":{}}', Policy(tries=1))


def spec_of(job: NewJob) -> str:
    assert job.chain is not None
    return job.chain


def test_a_success_dispatches_the_next_link_carrying_the_rest() -> None:
    first = chains.first_link(
        "c1", [link("a"), link("b"), link("c")], catch=None, finally_=link("f"), pass_result=True
    )
    step = chains.step(spec_of(first), "succeeded", '"r1"')
    assert step.dispatch is not None and step.dispatch.id == "b"
    assert not step.cancelled and not step.callbacks
    shown = chains.info(step.dispatch.chain)
    assert shown is not None and shown.position == 2
    assert (shown.previous and shown.previous.id, shown.next and shown.next.id) == ("a", "c")
    assert chains.passed_input(step.dispatch.chain) == (True, '"r1"')
    third = chains.step(step.dispatch.chain, "succeeded", "2").dispatch
    assert third is not None and third.id == "c"
    last = chains.step(third.chain, "succeeded")
    assert last.dispatch is None and [j.id for j in last.callbacks] == ["f"]


def test_a_stop_cancels_the_later_links_and_queues_catch_then_finally() -> None:
    first = chains.first_link(
        "c1",
        [link("a"), link("b"), link("c")],
        catch=link("k"),
        finally_=link("f"),
        pass_result=False,
    )
    step = chains.step(spec_of(first), "failed")
    assert step.dispatch is None
    assert [j.id for j in step.cancelled] == ["b", "c"]
    assert [j.id for j in step.callbacks] == ["k", "f"]
    assert "link 1/3 (job_a) failed" in step.reason
    later = chains.info(step.cancelled[1].chain)
    assert later is not None and later.position == 3 and later.catch_id == "k"
    assert chains.step(step.cancelled[1].chain, "succeeded") == chains.ChainStep()  # nothing left
    assert chains.passed_input(spec_of(first)) == (False, None)


def test_an_empty_rest_as_lua_writes_it_and_a_damaged_spec() -> None:
    first = chains.first_link("c1", [link("a")], catch=None, finally_=None, pass_result=False)
    lua_like = json.loads(spec_of(first)) | {"rest": {}}
    assert chains.step(json.dumps(lua_like), "succeeded") == chains.ChainStep()
    assert not chains.goes_on(json.dumps(lua_like))
    for damaged in ("", "{", "[]", '{"links": 3}', '{"links": [], "pos": "x", "rest": [1]}'):
        assert chains.step(damaged, "succeeded") == chains.ChainStep()
        assert chains.info(damaged) is None or damaged.startswith('{"links": []')


def test_a_link_id_leads_to_the_earlier_links() -> None:
    assert chains.earlier_links(chains.link_id("c9", 3)) == ["c9.2", "c9.1"]
    assert chains.earlier_links("c9.1") == []
    assert chains.earlier_links("3f2a9c") == [] and chains.earlier_links("a.b") == []


def test_later_links_and_callbacks_keep_overlap_and_rate_guards_but_no_unique_key() -> None:
    guards = Guards(
        unique_key="u",
        overlap_key="sync:1",
        overlap_delay=0.5,
        rate_key="api",
        rate_limit=3,
        rate_window=60.0,
    )
    first = chains.first_link(
        "c1",
        [link("a"), replace(link("b"), guards=guards)],
        catch=replace(link("x"), guards=guards),
        finally_=None,
        pass_result=False,
    )
    kept = replace(guards, unique_key=None)
    nxt = chains.step(spec_of(first), "succeeded").dispatch
    assert nxt is not None and nxt.guards == kept
    stopped = chains.step(spec_of(first), "failed")
    assert [j.guards for j in stopped.callbacks] == [kept]
    # a callback written before guards were kept, or with a damaged guard, has none
    old = callback_to_json(link("o"))
    assert "overlap_key" not in old and callback_from_json(old).guards == NO_GUARDS
    damaged = {**old, "overlap_key": 7, "rate_key": "api", "rate_limit": "x", "rate_window": 1}
    assert callback_from_json(damaged).guards == NO_GUARDS

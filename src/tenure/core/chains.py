"""Chains: jobs that run one after another, each dispatched by the store in the transaction
(SQL) or script (Redis) that records the previous link's success. Pure rules here; the stores
apply them (stores/sql/chains.py, stores/redis/lua/lib/chain_io.lua).

Only the running link exists as a row: it carries its chain (`NewJob.chain`, the `chain`
column or hash field) as JSON text, the later links written down in it as batch callbacks
are. So a chain has no rows waiting in a state of their own: nothing can reserve, count or
prune a link before its turn, and the chain lives exactly as long as its live link does. The
spec names every link's id and name up front, so `tenure jobs show` of any link can show the
whole chain, and a ChainHandle knows the last link's id at once.

    {"chain": ID, "pos": i, "links": [[id, name], ...], "rest": [link, ...],
     "catch": callback | null, "finally": callback | null, "pass": bool,
     "input": the previous link's stored result text (pass_result; absent on the first)}

`rest` holds links pos+1.. (callback_to_json, plus "priority"); the Redis store adds each
one's queue key base ("base") when the chain is enqueued.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tenure.core.codec import callback_from_json, callback_to_json
from tenure.core.records import NewJob

SUCCEEDED = "succeeded"


@dataclass(frozen=True)
class ChainLink:
    id: str
    name: str
    position: int  # 1-based


@dataclass(frozen=True)
class ChainInfo:
    """What any link's row says of its chain (tenure jobs show, the dashboard)."""

    id: str
    position: int  # this link's, 1-based
    links: tuple[ChainLink, ...]
    catch_id: str | None
    finally_id: str | None
    pass_result: bool

    @property
    def previous(self) -> ChainLink | None:
        return self.links[self.position - 2] if self.position > 1 else None

    @property
    def next(self) -> ChainLink | None:
        return self.links[self.position] if self.position < len(self.links) else None


@dataclass(frozen=True)
class ChainStep:
    """What the store does, in the same transaction or script, when a link ends for good."""

    dispatch: NewJob | None = None  # the next link, queued now (carrying its own spec)
    cancelled: list[NewJob] = field(default_factory=list)  # the later links, stored cancelled
    callbacks: list[NewJob] = field(default_factory=list)  # catch and/or finally, queued now
    reason: str = ""  # the cancelled links' last_error


def link_id(chain_id: str, position: int) -> str:
    """A link's id: its chain's id and its position (1-based), so that the id of a link not
    dispatched yet (no row) still leads to its chain (`earlier_links`)."""
    return f"{chain_id}.{position}"


def earlier_links(job_id: str) -> list[str]:
    """The ids of the links before `job_id` in its chain, nearest first; [] for an id that is
    not a link's."""
    chain_id, _, position = job_id.rpartition(".")
    if not chain_id or not position.isdigit():
        return []
    return [link_id(chain_id, k) for k in range(int(position) - 1, 0, -1)]


def link_json(job: NewJob) -> dict[str, Any]:
    return {**callback_to_json(job), "priority": job.priority}


def link_from_json(data: dict[str, Any]) -> NewJob:
    return replace(callback_from_json(data), priority=int(data.get("priority") or 0))


def first_link(
    chain_id: str,
    links: Sequence[NewJob],
    *,
    catch: NewJob | None,
    finally_: NewJob | None,
    pass_result: bool,
) -> NewJob:
    """The chain's first link, carrying the whole chain: the one job `enqueue_many` stores."""
    if not links:
        raise ValueError("a chain needs at least one link")
    spec = {
        "chain": chain_id,
        "pos": 0,
        "links": [[j.id, j.name] for j in links],
        "rest": [link_json(j) for j in links[1:]],
        "catch": None if catch is None else callback_to_json(catch),
        "finally": None if finally_ is None else callback_to_json(finally_),
        "pass": pass_result,
    }
    return replace(links[0], chain=json.dumps(spec, separators=(",", ":")))


def load(text: str | None) -> dict[str, Any] | None:
    """The stored spec, or None for a plain job or a spec too damaged to follow."""
    if not text:
        return None
    try:
        spec = json.loads(text)
    except ValueError:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("links"), list):
        return None
    return spec


def _rest(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rest = spec.get("rest")
    return rest if isinstance(rest, list) else []  # Lua's cjson writes an empty list as {}


def passed_input(text: str | None) -> tuple[bool, str | None]:
    """(True, the previous link's stored result text) when the store copied it into this
    link's spec (pass_result); (False, None) when the spec holds none."""
    spec = load(text)
    if spec is None or "input" not in spec:
        return False, None
    value = spec["input"]
    return True, value if isinstance(value, str) else None


def goes_on(text: str | None) -> bool:
    """True when a success of this link dispatches another link: a chain in a batch counts
    as a member only when it ends."""
    spec = load(text)
    return spec is not None and bool(_rest(spec))


def info(text: str | None) -> ChainInfo | None:
    spec = load(text)
    if spec is None:
        return None
    try:
        links = tuple(ChainLink(str(i), str(n), p + 1) for p, (i, n) in enumerate(spec["links"]))
        catch, finally_ = spec.get("catch"), spec.get("finally")
        return ChainInfo(
            id=str(spec["chain"]),
            position=int(spec["pos"]) + 1,
            links=links,
            catch_id=catch["id"] if isinstance(catch, dict) else spec.get("catch_id"),
            finally_id=finally_["id"] if isinstance(finally_, dict) else spec.get("finally_id"),
            pass_result=bool(spec.get("pass")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def step(text: str | None, outcome: str, result: str | None = None) -> ChainStep:
    """The link whose spec is `text` ended for good with `outcome` (succeeded, failed or
    cancelled): dispatch the next link; or, after the last, finally; or, when it did not
    succeed, cancel the later links and queue catch and finally. With pass_result the next
    link's spec takes this link's stored `result` text as its "input": the next link needs
    nothing of this one's row, which retention may prune before it runs."""
    spec = load(text)
    if spec is None:
        return ChainStep()
    try:
        rest = _rest(spec)
        callbacks = {k: spec.get(k) for k in ("catch", "finally")}
        if outcome == SUCCEEDED and rest:
            nxt = {**spec, "pos": int(spec["pos"]) + 1, "rest": rest[1:]}
            nxt.pop("input", None)
            if spec.get("pass"):
                nxt["input"] = result
            body = json.dumps(nxt, separators=(",", ":"))
            return ChainStep(dispatch=replace(link_from_json(rest[0]), chain=body))
        if outcome == SUCCEEDED:
            final = callbacks["finally"]
            return ChainStep(callbacks=[callback_from_json(final)] if final else [])
        pos = int(spec["pos"])
        name = spec["links"][pos][1]
        reason = f"its chain stopped: link {pos + 1}/{len(spec['links'])} ({name}) {outcome}"
        cancelled = [
            replace(link_from_json(link), chain=stopped_spec(spec, pos + 1 + k))
            for k, link in enumerate(rest)
        ]
        queued = [callback_from_json(c) for c in callbacks.values() if c]
        return ChainStep(cancelled=cancelled, callbacks=queued, reason=reason)
    except (KeyError, TypeError, ValueError, IndexError):
        return ChainStep()  # a damaged spec stops nothing more and sends nothing


def stopped_spec(spec: dict[str, Any], pos: int) -> str:
    """A cancelled later link's spec: the chain shown, nothing left to dispatch."""
    catch, finally_ = spec.get("catch"), spec.get("finally")
    shown = {
        "chain": spec["chain"],
        "pos": pos,
        "links": spec["links"],
        "rest": [],
        "catch": None,
        "finally": None,
        "catch_id": catch.get("id") if isinstance(catch, dict) else None,
        "finally_id": finally_.get("id") if isinstance(finally_, dict) else None,
        "pass": spec.get("pass", False),
    }
    return json.dumps(shown, separators=(",", ":"))


def queues(text: str | None) -> set[str]:
    """Every queue a chain's later links and callbacks will be enqueued in."""
    spec = load(text)
    if spec is None:
        return set()
    found = {str(j["queue"]) for j in _rest(spec) if isinstance(j, dict) and "queue" in j}
    for kind in ("catch", "finally"):
        c = spec.get(kind)
        if isinstance(c, dict) and "queue" in c:
            found.add(str(c["queue"]))
    return found


def with_bases(text: str | None, base_of: Any) -> str | None:
    """The spec with each later link's and callback's queue key base (Redis)."""
    spec = load(text)
    if spec is None:
        return text
    for link in _rest(spec):
        link["base"] = base_of(link["queue"])
    for kind in ("catch", "finally"):
        c = spec.get(kind)
        if isinstance(c, dict):
            c["base"] = base_of(c["queue"])
    return json.dumps(spec, separators=(",", ":"))

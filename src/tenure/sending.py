"""Signatures into stored jobs: each new job's id, payload, policy, guards, retention and
priority, and the batches they are sent in. App's dispatch and batch calls are doors onto
these; what they need of the App is the `Sender` below."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, Protocol

from tenure import tracing
from tenure.core import chains, payload
from tenure.core.errors import ConfigError
from tenure.core.guards import NO_GUARDS
from tenure.core.records import NewBatch, NewJob
from tenure.core.retention import Keep
from tenure.core.retry import Policy
from tenure.job import NO_OVERRIDE, Chain, Job, Sig
from tenure.stores import Store

Member = Sig | Chain | Sequence[Sig]  # a batch member: a job, or a chain counted as one


class Sender(Protocol):
    max_payload_bytes: int
    keep: Keep
    jobs: dict[str, Job[..., Any]]

    @property
    def store(self) -> Store: ...

    def get_definition(self, name: str) -> Job[..., Any]: ...


def new_id() -> str:
    return secrets.token_hex(8)


def new_job(
    app: Sender,
    sig: Sig,
    batch_id: str | None = None,
    job_id: str | None = None,
    *,
    trace: dict[str, str] | None = None,
    passed_from: str | None = None,
) -> NewJob:
    """The job to store for `sig`: refused here (a wrong call, an argument JSON cannot hold)
    rather than failing every try in a worker. `passed_from`: a chain link whose first
    argument will be that (previous) link's result."""
    # Everything a plain job's dispatch needs of its definition was decided when it was
    # registered (its policy's stored text, its retention); only the call's own parts are
    # worked out here: the arguments, their payload, guards when the job has any.
    job = app.jobs.get(sig.name) or app.get_definition(sig.name)
    job.check_call((None, *sig.args) if passed_from else sig.args, sig.kwargs)
    keep = job.keep_over(app.keep)
    if sig.keep is not NO_OVERRIDE:
        keep = sig.keep.over(keep)
    text = payload.encode(
        job.name,
        tuple(sig.args),
        dict(sig.kwargs),
        max_bytes=app.max_payload_bytes,
        encrypted=job.encrypted,
        trace=trace,
        passed_from=passed_from,
    )
    guards = (
        NO_GUARDS
        if job.unguarded
        else job.guards.for_call(job.name, tuple(sig.args), dict(sig.kwargs))
    )
    return NewJob(
        id=job_id or new_id(),
        name=job.name,
        queue=sig.queue or job.queue,
        payload=text,
        policy=dispatch_policy(app, job, sig.policy),
        delay=dispatch_delay(app, sig.delay, sig.at, guards.debounce),
        batch_id=batch_id,
        guards=guards,
        keep=keep,
        priority=job.priority if sig.priority is None else sig.priority,
    )


def dispatch_delay(app: Sender, delay: float, at: float | None, debounce: float | None) -> float:
    """Seconds until the job may run: `options(at=)` (on the store's clock) or the delay, and
    with debounce never sooner than `debounce` seconds after this, the key's last dispatch."""
    wait = delay if at is None else max(0.0, at - app.store.now())
    return wait if debounce is None else max(wait, debounce)


def dispatch_policy(app: Sender, job: Job[..., Any], chosen: Policy | None = None) -> Policy:
    """The policy stored with one dispatch: the job's (or `chosen`, the dispatch's own tries
    and timeout), with its retry_until deadline fixed now."""
    base = job.policy if chosen is None else chosen
    deadline = job.retry_until
    if deadline is None:
        return base
    if isinstance(deadline, timedelta):
        # measured from the first dispatch, on the store's clock like every schedule
        until = app.store.now() + deadline.total_seconds()
    else:
        until = deadline.timestamp()
    return replace(base, retry_until=until)


def start_batch(
    app: Sender,
    sigs: Sequence[Member],
    *,
    name: str,
    then: Sig | None,
    catch: Sig | None,
    finally_: Sig | None,
    allow_failures: bool,
    queue: str | None,
    total: int | None,
    first_ids: Callable[[str], list[str]] | None,
    conn: Any,
) -> str:
    """Store a batch, its members and its callbacks in one transaction; its id."""
    if total is not None and total < len(sigs):
        raise ConfigError(f"total: expected at least the {len(sigs)} jobs given, got {total}")
    batch_id = new_id()
    ids = first_ids(batch_id) if first_ids else [None] * len(sigs)
    named = member_names(sigs) + [s.name for s in (then, catch, finally_) if s is not None]
    with tracing.dispatching(named, batch_id=batch_id) as traced:
        members = [
            member_job(app, s, batch_id, i, traced.carrier, queue)
            for s, i in zip(sigs, ids, strict=True)
        ]
        callbacks = [
            new_job(app, c, trace=traced.carrier) if c is not None else None
            for c in (then, catch, finally_)
        ]
        traced.sent([(m.id, m.name, m.queue) for m in members])
        app.store.enqueue_many(
            members,
            batch=NewBatch(
                id=batch_id,
                name=name,
                total=total,
                allow_failures=allow_failures,
                then=callbacks[0],
                catch=callbacks[1],
                finally_=callbacks[2],
                keep=app.keep,
            ),
            conn=conn,
        )
    return batch_id


def add_members(
    app: Sender, batch_id: str, sigs: Sequence[Member], ids: Sequence[str] | None
) -> int:
    """Add members to a running batch; how many were added (ids present are skipped)."""
    chosen = list(ids) if ids is not None else [None] * len(sigs)
    with tracing.dispatching(member_names(sigs), batch_id=batch_id) as traced:
        members = [
            member_job(app, s, batch_id, i, traced.carrier)
            for s, i in zip(sigs, chosen, strict=True)
        ]
        traced.sent([(m.id, m.name, m.queue) for m in members])
        return len(app.store.enqueue_many(members, into_batch=batch_id))


def start_chain(
    app: Sender,
    sigs: Sequence[Sig],
    *,
    catch: Sig | None,
    finally_: Sig | None,
    pass_result: bool,
    conn: Any,
) -> tuple[str, list[tuple[str, str]]]:
    """Store a chain: its first link, carrying the rest (tenure.core.chains); the chain's id and
    each link's (id, name), in order."""
    _check_links(Chain(sigs, catch, finally_, pass_result))
    chain_id = new_id()
    named = [s.name for s in (*sigs, catch, finally_) if s is not None]
    with tracing.dispatching(named) as traced:
        first, links = chain_member(
            app, Chain(sigs, catch, finally_, pass_result), chain_id, None, None, traced.carrier
        )
        traced.sent([(first.id, first.name, first.queue)])
        app.store.enqueue_many([first], conn=conn)
    return chain_id, links


def _check_links(chain: Chain) -> None:
    """Refuse, before anything is stored, a link that is not a signature (a job itself, say:
    `[fetch, resize]` for `[fetch.sig(), resize.sig()]`)."""
    named: list[tuple[str, object]] = [(f"link {i}", s) for i, s in enumerate(chain.sigs, 1)]
    named += [(role, sig) for role, sig in (("catch", chain.catch), ("finally_", chain.finally_))]
    for role, sig in named:
        if isinstance(sig, Sig) or (sig is None and role in ("catch", "finally_")):
            continue
        short = sig.name.rsplit(".", 1)[-1] if isinstance(sig, Job) else ""
        hint = f"; did you mean {short}.sig(...)?" if short else ""
        raise ConfigError(
            f"chain: expected a signature such as job.sig(...) for {role}, got {sig!r}{hint}"
        )


def chain_member(
    app: Sender,
    chain: Chain,
    chain_id: str,
    batch_id: str | None,
    first_id: str | None,
    trace: dict[str, str] | None,
    queue: str | None = None,
) -> tuple[NewJob, list[tuple[str, str]]]:
    """A chain's first link (carrying the rest: tenure.core.chains), and every link's (id, name).
    `queue`: a batch's default queue, for links that name none."""
    if not chain.sigs:
        raise ConfigError("chain: expected at least one signature, got none")
    _check_links(chain)
    # ids made of the chain's id and the position: `tenure jobs show` of a link not dispatched
    # yet finds its chain through an earlier link (tenure.core.chains.earlier_links)
    ids = [chains.link_id(chain_id, k + 1) for k in range(len(chain.sigs))]
    if first_id is not None:
        ids[0] = first_id
    links = [
        new_job(
            app,
            replace(sig, queue=sig.queue or queue),
            batch_id if i == 0 else None,
            ids[i],
            trace=trace,
            passed_from=ids[i - 1] if chain.pass_result and i > 0 else None,
        )
        for i, sig in enumerate(chain.sigs)
    ]
    callbacks = [new_job(app, c, trace=trace) if c else None for c in (chain.catch, chain.finally_)]
    spread = {j.queue for j in (*links, *(c for c in callbacks if c))}
    if len(spread) > 1 and not app.store.capabilities.batches_span_queues:
        raise ConfigError(
            f"chain: on {app.store.capabilities.name} a chain's links and callbacks share one "
            f"queue (one slot), got {sorted(spread)}; give them one queue"
        )
    # A chain's links take no unique keys, as batch members take none: a first link deduplicated
    # against another job would leave a chain with no links at all.
    links[0] = replace(links[0], guards=replace(links[0].guards, unique_key=None))
    first = chains.first_link(
        chain_id, links, catch=callbacks[0], finally_=callbacks[1], pass_result=chain.pass_result
    )
    return first, [(j.id, j.name) for j in links]


def member_job(
    app: Sender,
    member: Member,
    batch_id: str,
    job_id: str | None,
    trace: dict[str, str] | None,
    queue: str | None = None,
) -> NewJob:
    """A batch member to store: a job, or a chain's first link (a list of signatures in a
    batch is a chain, as in Laravel's Bus::batch)."""
    if isinstance(member, Sig):
        return new_job(
            app, replace(member, queue=member.queue or queue), batch_id, job_id, trace=trace
        )
    chain = member if isinstance(member, Chain) else Chain(list(member))
    return chain_member(app, chain, new_id(), batch_id, job_id, trace, queue)[0]


def member_names(members: Sequence[Member]) -> list[str]:
    out: list[str] = []
    for m in members:
        if isinstance(m, Sig):
            out.append(m.name)
        else:
            chain = m if isinstance(m, Chain) else Chain(list(m))
            out += [s.name for s in (*chain.sigs, chain.catch, chain.finally_) if s is not None]
    return out

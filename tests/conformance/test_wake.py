"""wait_for_work: an idle worker sleeps until work may be there, and no longer than asked."""

from __future__ import annotations

import threading
import time

from conformance.helpers import enqueue, new_job
from tenure.stores import Store


def timed_wait(store: Store, timeout: float, queues: tuple[str, ...] = ("default",)) -> float:
    start = time.monotonic()
    store.wait_for_work(queues=queues, timeout=timeout)
    return time.monotonic() - start


def test_with_nothing_to_do_it_waits_about_the_timeout(store: Store) -> None:
    # The first call may return at once (a backend subscribing must not miss earlier work);
    # after that an idle store waits, but never much past the timeout.
    timed_wait(store, 0.5)
    elapsed = timed_wait(store, 0.5)
    assert 0.4 <= elapsed <= 2.5


def test_a_zero_timeout_returns_at_once(store: Store) -> None:
    timed_wait(store, 0.5)
    assert timed_wait(store, 0.0) < 1.0


def test_it_returns_early_when_a_job_is_enqueued_elsewhere(
    store: Store, other_store: Store
) -> None:
    timed_wait(store, 0.2)  # subscribed
    woke = threading.Event()
    elapsed: list[float] = []

    def waiter() -> None:
        elapsed.append(timed_wait(store, 20.0))
        woke.set()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    # Enqueue until the waiter wakes rather than once after a guessed sleep: a wake-up sent
    # before the waiter blocked may be invisible to a backend, and the test must not depend
    # on thread timing. One enqueue normally suffices.
    deadline = time.monotonic() + 10.0
    while not woke.wait(0.25) and time.monotonic() < deadline:
        enqueue(other_store, new_job())
    thread.join(timeout=25.0)
    assert elapsed, "wait_for_work did not return"
    assert elapsed[0] < 10.0, f"woke only after {elapsed[0]:.1f} s"

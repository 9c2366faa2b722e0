"""`--queues high=3,default=1`: each fetch tries the queues in a random order drawn in those
proportions (Sidekiq's weighted queues), so a busy `high` cannot starve `default`; names alone
keep strict order. The order is a pure function of a seeded random source."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tenure.core.errors import ConfigError
from tenure.settings import WorkerOptions, split_weights, weighted_order


def test_names_alone_keep_strict_order() -> None:
    options = WorkerOptions("a:app", queues=("high", "default"))
    assert options.weights == ()
    assert all(options.queue_order(random.Random(s)) == ("high", "default") for s in range(50))


def test_weights_put_each_queue_first_in_its_share() -> None:
    options = WorkerOptions("a:app", queues=("high=3", "default=1", "low"))
    assert options.queues == ("high", "default", "low")  # names for every other use
    assert options.weights == (3, 1, 1)  # a queue without a weight weighs 1
    rng = random.Random(7)
    orders = [options.queue_order(rng) for _ in range(10_000)]
    assert all(sorted(o) == ["default", "high", "low"] for o in orders)  # each queue, once
    first = Counter(o[0] for o in orders)
    assert 0.56 < first["high"] / 10_000 < 0.64  # 3/5
    assert 0.17 < first["default"] / 10_000 < 0.23  # 1/5


@pytest.mark.parametrize("entry", ["high=0", "high=x", "high=-1", "high=1.5", "high="])
def test_a_bad_weight_is_refused(entry: str) -> None:
    with pytest.raises(ConfigError, match="expected NAME or NAME=WEIGHT"):
        split_weights((entry, "default=1"))


def test_the_order_is_strict_without_weights() -> None:
    assert weighted_order(("a", "b"), (), random.Random(1)) == ("a", "b")

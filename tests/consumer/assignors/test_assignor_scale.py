"""Kafka's large-group sticky cases (AbstractStickyAssignorTest.testLarge*, *NotTimeout), with Kafka's timeouts."""

from __future__ import annotations

import time

import pytest

from consumer.assignors import Subscription, get_assignor
from _assignor_helpers import verify_validity_and_balance


def name(prefix, i, max_num):
    return prefix + str(i).zfill(len(str(max_num)))


def second_round_subs(kind, assignor, topics_of, result, skip_first=True):
    subs = {}
    for i, (m, ts) in enumerate(topics_of.items()):
        owned = result[m].partitions if (i > 0 or not skip_first) else ()
        if i == 0 and skip_first:
            subs[m] = Subscription(ts)
        elif kind == "sticky":
            subs[m] = Subscription(ts, assignor.subscription_user_data(set(ts), owned, 1), owned, 1)
        else:
            subs[m] = Subscription(ts, assignor.subscription_user_data(set(ts), None, 1), owned, 1)
    return subs


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "last-consumer-one-topic"])
def test_large_assignment_one_million_partitions(kind, uniform):
    """testLargeAssignmentAndGroupWith{Uniform,NonEqual}Subscription: 500 topics x 2,000 partitions, 2,000
    consumers; Kafka allows 30 s (uniform) and 90 s (non-equal) for both rounds."""
    topics = [name("t", i, 500) for i in range(500)]
    counts = {t: 2000 for t in topics}
    topics_of = {name("c", i, 2000): (topics if uniform or i < 1999 else topics[:1]) for i in range(2000)}
    assignor = get_assignor(kind)
    start = time.perf_counter()
    first = assignor.assign(counts, {m: Subscription(ts) for m, ts in topics_of.items()})
    second = assignor.assign(counts, second_round_subs(kind, assignor, topics_of, first))
    elapsed = time.perf_counter() - start
    assert elapsed < (30 if uniform else 90)
    sizes = [len(a.partitions) for a in second.values()]
    assert sum(sizes) <= 1_000_000
    if kind == "sticky":
        assert sum(sizes) == 1_000_000


@pytest.mark.parametrize("kind", ["sticky", "cooperative-sticky"])
def test_assignment_and_group_with_non_equal_subscription_not_timeout(kind):
    topics = [name("t", i, 100) for i in range(100)]
    counts = {t: 200 for t in topics}
    topics_of = {name("c", i, 500): (topics[:50] if i % 4 == 0 else topics[50:]) for i in range(500)}
    assignor = get_assignor(kind)
    start = time.perf_counter()
    first = assignor.assign(counts, {m: Subscription(ts) for m, ts in topics_of.items()})
    verify_validity_and_balance({m: Subscription(t) for m, t in topics_of.items()},
                                {m: list(a.partitions) for m, a in first.items()})
    assignor.assign(counts, second_round_subs(kind, assignor, topics_of, first))
    assert time.perf_counter() - start < 90

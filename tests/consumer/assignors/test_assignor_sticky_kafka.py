"""Kafka's AbstractStickyAssignorTest / StickyAssignorTest / CooperativeStickyAssignorTest cases, ported.

Every case runs for both sticky assignors and, where Kafka parameterises it, every RackConfig.
"""

from __future__ import annotations

import random

import pytest

from consumer.assignors import CooperativeStickyAssignor, StickyAssignor, Subscription, TopicPartition
from _assignor_helpers import (ALL_RACKS, RACK_CONFIGS, StickyHarness, is_fully_balanced, null_racks, racks,
                               tp, verify_rack_assignment)

KINDS = ["sticky", "cooperative-sticky"]

topic, topic1, topic2, topic3 = "topic", "topic1", "topic2", "topic3"
c1, c2, c3, c4 = "consumer1", "consumer2", "consumer3", "consumer4"
GEN = 1


@pytest.fixture(params=[(k, r) for k in KINDS for r in RACK_CONFIGS], ids=lambda p: f"{p[0]}-{p[1]}")
def h(request) -> StickyHarness:
    return StickyHarness(*request.param)


@pytest.fixture(params=KINDS)
def hk(request) -> StickyHarness:
    return StickyHarness(request.param)


def name(prefix: str, i: int, max_num: int) -> str:
    return prefix + str(i).zfill(len(str(max_num)))


def test_one_consumer_no_topic(h):
    subs = {"consumer": h.subscription([], 0)}
    a = h.assign(subs)
    assert a == {"consumer": []}
    assert h.transferring == {}


def test_one_consumer_nonexistent_topic(h):
    h.counts[topic] = 0
    subs = {"consumer": h.subscription([topic], 0)}
    a = h.assign(subs)
    assert a == {"consumer": []}
    assert h.transferring == {}


def test_one_consumer_one_topic(h):
    h.add_topic(topic, 3)
    subs = {"consumer": h.subscription([topic], 0)}
    a = h.assign(subs)
    assert a["consumer"] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]
    assert h.transferring == {}


def test_only_assigns_partitions_from_subscribed_topics(h):
    h.add_topic(topic, 2)
    subs = {"consumer": h.sub_v2([topic], [tp(topic, 0), tp(topic, 1), tp("other", 0), tp("other", 1)], GEN, 0)}
    a = h.assign(subs)
    assert a["consumer"] == [tp(topic, 0), tp(topic, 1)]
    assert h.transferring == {}


def test_one_consumer_multiple_topics(h):
    h.add_topic(topic1, 1)
    h.add_topic(topic2, 2)
    a = h.assign({"consumer": h.subscription([topic1, topic2], 0)})
    assert a["consumer"] == [tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)]


def test_two_consumers_one_topic_one_partition(h):
    h.add_topic(topic, 1)
    subs = {c1: h.subscription([topic], 0), c2: h.subscription([topic], 1)}
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    assert is_fully_balanced(a)


def test_two_consumers_one_topic_two_partitions(h):
    h.add_topic(topic, 2)
    subs = {c1: h.subscription([topic], 0), c2: h.subscription([topic], 1)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic, 0)]
    assert a[c2] == [tp(topic, 1)]
    assert h.transferring == {}


def test_multiple_consumers_mixed_topic_subscriptions(h):
    h.add_topic(topic1, 3)
    h.add_topic(topic2, 2)
    subs = {c1: h.subscription([topic1], 0), c2: h.subscription([topic1, topic2], 1),
            c3: h.subscription([topic1], 2)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic1, 0), tp(topic1, 2)]
    assert a[c2] == [tp(topic2, 0), tp(topic2, 1)]
    assert a[c3] == [tp(topic1, 1)]
    assert h.transferring is None
    h.verify(subs, a)


def test_two_consumers_two_topics_six_partitions(h):
    h.add_topic(topic1, 3)
    h.add_topic(topic2, 3)
    subs = {c1: h.subscription([topic1, topic2], 0), c2: h.subscription([topic1, topic2], 1)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]
    assert a[c2] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]
    assert h.transferring == {}


def test_consumer_owning_min_quota_expected_max_quota(h):
    h.add_topic(topic1, 2)
    h.add_topic(topic2, 3)
    ts = [topic1, topic2]
    subs = {c1: h.sub_v2(ts, [tp(topic1, 0), tp(topic2, 1)], GEN, 0),
            c2: h.sub_v2(ts, [tp(topic1, 1), tp(topic2, 2)], GEN, 1)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic1, 0), tp(topic2, 1), tp(topic2, 0)]
    assert a[c2] == [tp(topic1, 1), tp(topic2, 2)]
    assert h.transferring == {}


def test_max_quota_consumer_more_than_num_expected_max_capacity_members(h):
    h.add_topic(topic1, 2)
    h.add_topic(topic2, 2)
    ts = [topic1, topic2]
    subs = {c1: h.sub_v2(ts, [tp(topic1, 0), tp(topic2, 0)], GEN, 0),
            c2: h.sub_v2(ts, [tp(topic1, 1), tp(topic2, 1)], GEN, 1),
            c3: h.sub_v2(ts, [], GEN, 2)}
    a = h.assign(subs)
    assert h.transferring == {tp(topic2, 0): c3}
    h.verify(subs, a)
    assert a[c1] == [tp(topic1, 0)]
    assert a[c2] == [tp(topic1, 1), tp(topic2, 1)]
    assert a[c3] == [tp(topic2, 0)]


def test_all_consumers_are_under_min_quota(h):
    h.add_topic(topic1, 2)
    h.add_topic(topic2, 3)
    ts = [topic1, topic2]
    subs = {c1: h.sub_v2(ts, [tp(topic1, 0)], GEN, 0), c2: h.sub_v2(ts, [tp(topic1, 1)], GEN, 1),
            c3: h.sub_v2(ts, [], GEN, 2)}
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    assert a[c1] == [tp(topic1, 0), tp(topic2, 1)]
    assert a[c2] == [tp(topic1, 1), tp(topic2, 2)]
    assert a[c3] == [tp(topic2, 0)]


def test_add_remove_consumer_one_topic(h):
    h.add_topic(topic, 3)
    subs = {c1: h.subscription([topic], 0)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]
    subs[c1] = h.sub_v2([topic], a[c1], GEN, 0)
    subs[c2] = h.sub_v2([topic], [], GEN, 1)
    a = h.assign(subs)
    assert h.transferring == {tp(topic, 2): c2}
    h.verify(subs, a)
    assert a[c1] == [tp(topic, 0), tp(topic, 1)]
    assert a[c2] == [tp(topic, 2)]
    del subs[c1]
    subs[c2] = h.sub_v2([topic], a[c2], GEN, 1)
    a = h.assign(subs)
    assert set(a[c2]) == {tp(topic, 0), tp(topic, 1), tp(topic, 2)}
    assert h.transferring == {}


def test_topic_balance_after_reassignment(h):
    all_topics = [topic1, topic2]
    h.add_topic(topic1, 12)
    h.add_topic(topic2, 12)
    subs = {c1: h.subscription(all_topics, 0)}
    a = h.assign(subs)
    for stage, (members, new) in enumerate([([c1], [c2]), ([c1, c2], [c3, c4])]):
        for i, m in enumerate(members):
            subs[m] = h.sub_v2(all_topics, a[m], GEN, [c1, c2, c3, c4].index(m))
        for m in new:
            subs[m] = h.sub_v2(all_topics, [], GEN, [c1, c2, c3, c4].index(m))
        a = h.assign(subs)
        h.verify(subs, a)
        per = 12 // len(subs)
        for parts in a.values():
            assert sum(p.topic == topic1 for p in parts) == per
            assert sum(p.topic == topic2 for p in parts) == per
    del subs[c1], subs[c2]
    subs[c3] = h.sub_v2(all_topics, a[c3], GEN, 2)
    subs[c4] = h.sub_v2(all_topics, a[c4], GEN, 3)
    a = h.assign(subs)
    h.verify(subs, a)
    for parts in a.values():
        assert sum(p.topic == topic1 for p in parts) == 6
    assert h.transferring == {}


def test_add_remove_two_consumers_two_topics(h):
    all_topics = [topic1, topic2]
    h.add_topic(topic1, 3)
    h.add_topic(topic2, 4)
    subs = {c1: h.subscription(all_topics, 0), c2: h.subscription(all_topics, 1)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1), tp(topic2, 3)]
    assert a[c2] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]
    subs[c1] = h.sub_v2(all_topics, a[c1], GEN, 0)
    subs[c2] = h.sub_v2(all_topics, a[c2], GEN, 1)
    subs[c3] = h.sub_v2(all_topics, [], GEN, 2)
    subs[c4] = h.sub_v2(all_topics, [], GEN, 3)
    a = h.assign(subs)
    assert h.transferring == {tp(topic1, 2): c3, tp(topic2, 3): c3, tp(topic2, 2): c4}
    h.verify(subs, a)
    assert a[c1] == [tp(topic1, 0), tp(topic2, 1)]
    assert a[c2] == [tp(topic2, 0), tp(topic1, 1)]
    assert a[c3] == [tp(topic1, 2), tp(topic2, 3)]
    assert a[c4] == [tp(topic2, 2)]
    del subs[c1], subs[c2]
    subs[c3] = h.sub_v2(all_topics, a[c3], GEN, 2)
    subs[c4] = h.sub_v2(all_topics, a[c4], GEN, 3)
    a = h.assign(subs)
    assert a[c3] == [tp(topic1, 2), tp(topic2, 3), tp(topic1, 0), tp(topic2, 1)]
    assert a[c4] == [tp(topic2, 2), tp(topic1, 1), tp(topic2, 0)]
    assert h.transferring == {}


def test_poor_round_robin_assignment_scenario(h):
    for i in range(1, 6):
        h.add_topic(f"topic{i}", (i % 2) + 1)
    subs = {"consumer1": h.subscription(["topic1", "topic2", "topic3", "topic4", "topic5"], 0),
            "consumer2": h.subscription(["topic1", "topic3", "topic5"], 1),
            "consumer3": h.subscription(["topic1", "topic3", "topic5"], 2),
            "consumer4": h.subscription(["topic1", "topic2", "topic3", "topic4", "topic5"], 3)}
    a = h.assign(subs)
    h.verify(subs, a)


def test_add_remove_topic_two_consumers(h):
    h.add_topic(topic, 3)
    subs = {c1: h.subscription([topic], 0), c2: h.subscription([topic], 1)}
    a = h.assign(subs)
    assert is_fully_balanced(a)
    a1c1, a1c2 = list(a[c1]), list(a[c2])
    h.add_topic(topic2, 3)
    subs[c1] = h.sub_v2([topic, topic2], a[c1], GEN, 0)
    subs[c2] = h.sub_v2([topic, topic2], a[c2], GEN, 1)
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    assert len(a[c1]) == 3 and len(a[c2]) == 3
    assert set(a1c1) <= set(a[c1]) and set(a1c2) <= set(a[c2])
    a2c1, a2c2 = list(a[c1]), list(a[c2])
    del h.counts[topic]
    subs[c1] = h.sub_v2([topic2], a[c1], GEN, 0)
    subs[c2] = h.sub_v2([topic2], a[c2], GEN, 1)
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    assert sorted([len(a[c1]), len(a[c2])]) == [1, 2]
    assert set(a[c1]) <= set(a2c1) and set(a[c2]) <= set(a2c2)


def test_reassignment_after_one_consumer_leaves(h):
    for i in range(1, 20):
        h.add_topic(name("t", i, 20), i)
    subs = {}
    for i in range(1, 20):
        subs[name("c", i, 20)] = h.subscription([name("t", j, 20) for j in range(1, i + 1)], i)
    a = h.assign(subs)
    h.verify(subs, a)
    for i in range(1, 20):
        c = name("c", i, 20)
        subs[c] = h.sub_v2(subs[c].topics, a[c], GEN, i)
    del subs["c10"]
    a = h.assign(subs)
    h.verify(subs, a)
    assert h.assignor.is_sticky()


def test_reassignment_after_one_consumer_added(h):
    h.add_topic("topic", 20)
    subs = {name("c", i, 10): h.subscription(["topic"], i) for i in range(1, 10)}
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    subs[name("c", 10, 10)] = h.subscription(["topic"], 10)
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)


def test_same_subscriptions(h):
    for i in range(1, 15):
        h.add_topic(name("t", i, 15), i)
    ts = [name("t", j, 15) for j in range(1, 15)]
    subs = {name("c", i, 9): h.subscription(ts, i) for i in range(1, 9)}
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    for i in range(1, 9):
        c = name("c", i, 9)
        subs[c] = h.sub_v2(subs[c].topics, a[c], GEN, i)
    del subs[name("c", 5, 9)]
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)


def test_new_subscription(h):
    for i in range(1, 5):
        h.add_topic(name("t", i, 5), 1)
    subs = {}
    for i in range(3):
        subs[name("c", i, 3)] = h.subscription([name("t", j, 5) for j in range(i, 3 * i - 1)], i)
    a = h.assign(subs)
    h.verify(subs, a)
    old = subs[name("c", 0, 3)]
    subs[name("c", 0, 3)] = Subscription(list(old.topics) + [name("t", 1, 5)], old.user_data,
                                         old.owned_partitions, old.generation_id, rack_id=old.rack_id)
    a = h.assign(subs)
    h.verify(subs, a)
    assert h.assignor.is_sticky()


def test_move_existing_assignments(h):
    for i in range(1, 7):
        h.add_topic(f"topic{i}", 1)
    subs = {c1: h.sub_v2([topic1, topic2], [tp(topic1, 0)], GEN, 0),
            c2: h.sub_v2([topic1, topic2, topic3, "topic4"], [tp(topic2, 0), tp(topic3, 0)], GEN, 1),
            c3: h.sub_v2([topic2, topic3, "topic4", "topic5", "topic6"],
                         [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)], GEN, 2)}
    a = h.assign(subs)
    assert h.transferring is None
    h.verify(subs, a)


def test_stickiness(h):
    h.add_topic(topic1, 3)
    subs = {c: h.subscription([topic1], i) for i, c in enumerate([c1, c2, c3, c4])}
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    before = {}
    for c, parts in a.items():
        assert len(parts) <= 1
        if parts:
            before[c] = parts[0]
    del subs[c1]
    for i, c in enumerate([c2, c3, c4], start=1):
        subs[c] = h.sub_v2([topic1], a[c], GEN, i)
    a = h.assign(subs)
    assert h.transferring == {}
    h.verify(subs, a)
    for c, parts in a.items():
        assert len(parts) == 1
        assert c not in before or before[c] in parts


def test_assignment_updated_for_deleted_topic(h):
    h.add_topic(topic1, 1)
    h.add_topic(topic3, 100)
    a = h.assign({"consumer": h.subscription([topic1, topic2, topic3], 0)})
    assert h.transferring == {}
    assert sum(len(v) for v in a.values()) == 101


def test_no_exception_thrown_when_only_subscribed_topic_deleted(h):
    h.add_topic(topic, 3)
    subs = {"consumer": h.subscription([topic], 0)}
    a = h.assign(subs)
    subs["consumer"] = h.sub_v2([topic], a["consumer"], GEN, 0)
    h.counts.clear()
    a = h.assign(subs)
    assert h.transferring == {}
    assert a == {"consumer": []}


def test_reassignment_with_random_subscriptions_and_changes(h):
    rnd = random.Random(42)
    for _ in range(10):
        h.counts.clear()
        num_topics = 10 + rnd.randrange(10)
        topics = [name("t", i, 20) for i in range(num_topics)]
        for i, t in enumerate(topics):
            h.add_topic(t, i + 1)
        n = 20 + rnd.randrange(20)

        def sublist():
            sel = list(topics)
            for _ in range(rnd.randrange(len(topics))):
                sel.pop(rnd.randrange(len(sel)))
            return sorted(sel)

        subs = {name("c", i, 40): h.subscription(sublist(), i) for i in range(n)}
        h.assignor = type(h.assignor)()
        h.assignor.prefer_rack_aware_logic = True
        a = h.assign(subs)
        h.verify(subs, a)
        subs = {name("c", i, 40): h.sub_v2(sublist(), a[name("c", i, 40)], GEN, i) for i in range(n)}
        a = h.assign(subs)
        h.verify(subs, a)
        assert h.assignor.is_sticky()


def test_all_consumers_reach_expected_quota_and_are_considered_filled(h):
    h.add_topic(topic, 4)
    subs = {c1: h.sub_v2([topic], [tp(topic, 0), tp(topic, 1)], GEN, 0),
            c2: h.sub_v2([topic], [tp(topic, 2)], GEN, 1), c3: h.sub_v2([topic], [], GEN, 2)}
    a = h.assign(subs)
    assert a[c1] == [tp(topic, 0), tp(topic, 1)]
    assert a[c2] == [tp(topic, 2)]
    assert a[c3] == [tp(topic, 3)]
    assert h.transferring == {}


@pytest.mark.parametrize("other_generation", [9, -1])
def test_owned_partitions_invalidated_for_stale_or_no_generation(h, other_generation):
    h.add_topic(topic, 3)
    h.add_topic(topic2, 3)
    owned = [tp(topic, 0), tp(topic, 2), tp(topic2, 1)]
    subs = {c1: h.sub_v2([topic, topic2], owned, 10, 0), c2: h.sub_v2([topic, topic2], owned, other_generation, 1)}
    a = h.assign(subs)
    assert set(a[c1]) == set(owned)
    assert set(a[c2]) == {tp(topic, 1), tp(topic2, 0), tp(topic2, 2)}
    assert h.transferring == {}


def test_partitions_transferring_ownership_include_partition_claimed_by_multiple(h):
    h.add_topic(topic, 3)
    subs = {c1: h.sub_v2([topic], [tp(topic, 0), tp(topic, 1)], GEN, 0),
            c2: h.sub_v2([topic], [tp(topic, 0), tp(topic, 2)], GEN, 1), c3: h.sub_v2([topic], [], GEN, 2)}
    a = h.assign(subs)
    assert h.transferring == {tp(topic, 0): c3}
    h.verify(subs, a)
    assert a[c1] == [tp(topic, 1)]
    assert a[c2] == [tp(topic, 2)]
    assert a[c3] == [tp(topic, 0)]


def test_ensure_partitions_assigned_to_highest_generation(h):
    for t in (topic, topic2, topic3):
        h.add_topic(t, 3)
    ts = [topic, topic2, topic3]
    subs = {c1: h.sub_v2(ts, [tp(topic, 0), tp(topic2, 0), tp(topic3, 0)], 10, 0),
            c2: h.sub_v2(ts, [tp(topic, 1), tp(topic2, 1), tp(topic3, 1)], 9, 1),
            c3: h.sub_v2(ts, [tp(topic2, 1), tp(topic3, 0), tp(topic3, 2)], 8, 1)}
    a = h.assign(subs)
    assert set(a[c1]) == {tp(topic, 0), tp(topic2, 0), tp(topic3, 0)}
    assert set(a[c2]) == {tp(topic, 1), tp(topic2, 1), tp(topic3, 1)}
    assert set(a[c3]) == {tp(topic, 2), tp(topic2, 2), tp(topic3, 2)}
    assert h.transferring == {}


def test_no_reassignment_on_current_members(h):
    for t in (topic, topic1, topic2, topic3):
        h.add_topic(t, 3)
    ts = [topic, topic2, topic3, topic1]
    subs = {c1: h.sub_v2(ts, [], -1, 0),
            c2: h.sub_v2(ts, [tp(topic, 0), tp(topic2, 0), tp(topic1, 0)], 9, 1),
            c3: h.sub_v2(ts, [tp(topic3, 2), tp(topic2, 2), tp(topic1, 1)], 8, 2),
            c4: h.sub_v2(ts, [tp(topic3, 1), tp(topic, 1), tp(topic, 2)], 7, 3)}
    a = h.assign(subs)
    assert set(a[c1]) == {tp(topic1, 2), tp(topic2, 1), tp(topic3, 0)}
    assert h.transferring == {}


def test_owned_partitions_invalidated_for_consumer_with_multiple_generation(h):
    h.add_topic(topic, 3)
    h.add_topic(topic2, 3)
    subs = {c1: h.sub_v2([topic, topic2], [tp(topic, 0), tp(topic2, 1), tp(topic, 1)], 10, 0),
            c2: h.sub_v2([topic, topic2], [tp(topic, 0), tp(topic2, 1), tp(topic2, 2)], 8, 1)}
    a = h.assign(subs)
    assert set(a[c1]) == {tp(topic, 0), tp(topic2, 1), tp(topic, 1)}
    assert set(a[c2]) == {tp(topic, 2), tp(topic2, 2), tp(topic2, 0)}
    assert h.transferring == {}


def test_subscription_not_equal_and_assign_same_partition_with_3_generation(hk):
    hk.add_topic(topic, 6)
    hk.add_topic(topic1, 1)
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        subs = {c1: hk.sub_v2([topic], [tp(topic, 0), tp(topic, 2)], g1, 0),
                c2: hk.sub_v2([topic], [tp(topic, 1), tp(topic, 2), tp(topic, 3)], g2, 1),
                c3: hk.sub_v2([topic], [tp(topic, 2), tp(topic, 4), tp(topic, 5)], g3, 2),
                c4: hk.sub_v2([topic1], [tp(topic1, 0)], 2, 3)}
        a = hk.assign(subs)
        allp = [p for v in a.values() for p in v]
        assert len(allp) == len(set(allp))
        for v in a.values():
            assert 1 <= len(v) <= 2


def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(h):
    rnd = random.Random(7)
    for i in range(40):
        h.add_topic(name("t", i, 40), rnd.randrange(10) + 1)
    subs = {}
    for i in range(200):
        ts = [name("t", rnd.randrange(40), 40) for _ in range(rnd.randrange(20))]
        subs[name("c", i, 200)] = h.subscription(ts, i)
    a = h.assign(subs)
    h.verify(subs, a)
    for i in range(1, 200):
        c = name("c", i, 200)
        subs[c] = h.sub_v2(subs[c].topics, a[c], GEN, i)
    for _ in range(50):
        subs.pop(name("c", rnd.randrange(200), 200), None)
    a = h.assign(subs)
    h.verify(subs, a)
    assert h.assignor.is_sticky()


# --- rack-aware sticky (AbstractStickyAssignorTest.testRackAwareAssignmentWith*) -----------------------------

T3 = {"t1": 6, "t2": 7, "t3": 2}


def _uniform(assignor, rf, broker_racks, consumer_racks, topics, expected, mismatch):
    verify_rack_assignment(assignor, T3, rf, broker_racks, consumer_racks, topics, None, expected, mismatch)
    verify_rack_assignment(assignor, T3, rf, broker_racks, consumer_racks, topics, expected, expected, mismatch)


@pytest.mark.parametrize("kind", KINDS)
def test_rack_aware_assignment_with_uniform_subscription(kind):
    a = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    all_t = ["t1", "t2", "t3"]
    ct = [all_t, all_t, all_t]
    exp = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
    _uniform(a, 3, null_racks(3), racks(3), ct, exp, -1)
    _uniform(a, 3, racks(3), null_racks(3), ct, exp, -1)
    a.prefer_rack_aware_logic = True
    _uniform(a, 3, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 4, racks(4), racks(3), ct, exp, 0)
    a.prefer_rack_aware_logic = False
    _uniform(a, 3, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 3, racks(3), ["d", "e", "f"], ct, exp, -1)
    _uniform(a, 3, racks(3), [None, "e", "f"], ct, exp, -1)
    _uniform(a, 1, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 2, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 3, racks(2), racks(3), ct, exp, 5)
    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    if kind == "sticky":
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, owned, exp, 0)
    else:
        # KAFKA-15170: misaligned owned partitions given to another member are "transferring ownership", so
        # the cooperative assignor withholds them for one round, then converges to the same assignment.
        owner = {p: i for i, s in enumerate(owned) for p in s.split(", ")}
        intermediate = [", ".join(p for p in e.split(", ") if owner[p] == i) for i, e in enumerate(exp)]
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, owned, intermediate, 0)
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, intermediate, exp, 0)
    a.prefer_rack_aware_logic = True
    verify_rack_assignment(a, T3, 3, racks(3), racks(3), ct, exp, exp, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_rack_aware_assignment_with_non_equal_subscription(kind):
    a = StickyAssignor() if kind == "sticky" else CooperativeStickyAssignor()
    all_t = ["t1", "t2", "t3"]
    ct = [all_t, all_t, ["t1", "t3"]]
    exp = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]
    _uniform(a, 3, null_racks(3), racks(3), ct, exp, -1)
    _uniform(a, 3, racks(3), null_racks(3), ct, exp, -1)
    a.prefer_rack_aware_logic = True
    _uniform(a, 3, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 4, racks(4), racks(3), ct, exp, 0)
    a.prefer_rack_aware_logic = False
    _uniform(a, 3, racks(3), racks(3), ct, exp, 0)
    _uniform(a, 3, racks(3), ["d", "e", "f"], ct, exp, -1)
    _uniform(a, 3, racks(3), [None, "e", "f"], ct, exp, -1)
    _uniform(a, 1, racks(3), racks(3), ct,
             ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"], 4)
    _uniform(a, 2, racks(3), racks(3), ct,
             ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"], 0)
    _uniform(a, 3, racks(2), racks(3), ct, exp, 5)
    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    aligned = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    if kind == "sticky":
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, owned, aligned, 4)
        a.prefer_rack_aware_logic = False
        verify_rack_assignment(a, T3, 3, racks(3), racks(3), ct, owned, exp, 0)
        a.prefer_rack_aware_logic = True
        verify_rack_assignment(a, T3, 3, racks(3), racks(3), ct, owned, exp, 0)
    else:
        intermediate = ["t1-3", "t2-1", "t3-1"]
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, owned, intermediate, 0)
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, intermediate, aligned, 4)
        final = ["t1-2, t1-3, t1-4, t2-4, t2-5", "t2-0, t2-1, t2-2, t2-3, t2-6", "t1-0, t1-1, t1-5, t3-0, t3-1"]
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        for prefer in (False, True):
            a.prefer_rack_aware_logic = prefer
            verify_rack_assignment(a, T3, 3, racks(3), racks(3), ct, owned, intermediate, 0)
            verify_rack_assignment(a, T3, 3, racks(3), racks(3), ct, intermediate, final, 0)


# --- StickyAssignorTest -------------------------------------------------------------------------------------

@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
@pytest.mark.parametrize("partitions,expected_c1", [(3, [tp(topic, 1)]), (4, [tp(topic, 1), tp(topic, 3)])])
def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple(rack_config, partitions,
                                                                                expected_c1):
    for kind in KINDS:
        h = StickyHarness(kind, rack_config)
        h.add_topic(topic, partitions)
        subs = {c1: h.sub_v2([topic], [tp(topic, 0), tp(topic, 1)], GEN, 0),
                c2: h.sub_v2([topic], [tp(topic, 0), tp(topic, 2)], GEN, 1), c3: h.sub_v2([topic], [], GEN, 2)}
        a = h.assign(subs)
        assert a[c1] == expected_c1
        assert a[c2] == [tp(topic, 2)]
        # eager: topic-0 goes to consumer3 at once; cooperative: withheld until both claimants revoked it
        assert a[c3] == ([tp(topic, 0)] if kind == "sticky" else [])
        h.verify(subs, a)
        assert is_fully_balanced(a)


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("all_equal", [True, False])
def test_assignment_with_multiple_generations_1(rack_config, kind, all_equal):
    h = StickyHarness(kind, rack_config)
    all_topics = [topic, topic2]
    c2_topics = all_topics if all_equal else [topic]
    h.add_topic(topic, 6)
    h.add_topic(topic2, 6)
    subs = {c1: h.subscription(all_topics, 0), c2: h.subscription(c2_topics, 1), c3: h.subscription(all_topics, 2)}
    a = h.assign(subs)
    r1 = {c: list(a[c]) for c in (c1, c2, c3)}
    assert all(len(v) == 4 for v in r1.values())
    h.verify(subs, a)
    subs[c1] = h.sub_v2(all_topics, r1[c1], GEN, 0)
    subs[c2] = h.sub_v2(c2_topics, r1[c2], GEN, 1)
    del subs[c3]
    a = h.assign(subs)
    h.verify(subs, a)
    r2 = {c: list(a[c]) for c in (c1, c2)}
    assert len(r2[c1]) == 6 and len(r2[c2]) == 6
    if all_equal:
        assert set(r1[c1]) <= set(r2[c1])
    assert set(r1[c2]) <= set(r2[c2])
    assert set(r2[c2]) & set(r1[c3])
    del subs[c1]
    subs[c2] = h.sub_v2(c2_topics, r2[c2], 2, 1)
    subs[c3] = h.sub_v2(all_topics, r1[c3], 1, 2)
    a = h.assign(subs)
    h.verify(subs, a)
    assert len(a[c2]) == 6 and len(a[c3]) == 6
    assert not set(a[c2]) & set(a[c3])


@pytest.mark.parametrize("all_equal", [True, False])
def test_assignment_with_conflicting_previous_generations(all_equal):
    h = StickyHarness("sticky")  # StickyAssignorTest only
    for t in (topic, topic2, topic3):
        h.add_topic(t, 4)
    all_topics = [topic, topic2, topic3]
    c1_topics = all_topics if all_equal else [topic]
    c2_topics = all_topics if all_equal else [topic, topic2]
    t0 = [tp(topic, i) for i in range(4)]
    t2 = [tp(topic2, i) for i in range(4)]
    t3 = [tp(topic3, i) for i in range(4)]
    c1p = [t0[0], t0[1], t0[2], t2[2], t2[3], t3[0]] if all_equal else t0
    c2p = [t0[0], t0[1], t2[0], t2[1], t2[2], t2[3]]
    c3p = [t0[2], t0[3], t3[0], t3[1], t3[2], t3[3]]
    subs = {c1: h.sub_v2(c1_topics, c1p, 1, 0), c2: h.sub_v2(c2_topics, c2p, 2, 1),
            c3: h.sub_v2(all_topics, c3p, 2, 2)}
    a = h.assign(subs)
    assert all(len(a[c]) == 4 for c in (c1, c2, c3))
    assert set(a[c2]) <= set(c2p) and set(a[c3]) <= set(c3p)
    h.verify(subs, a)


def test_schema_backward_compatibility():
    from _assignor_helpers import tp as _tp  # noqa: F401
    import struct
    h = StickyHarness("sticky")
    h.add_topic(topic, 3)
    subs = {c1: h.subscription([topic], 0), c2: h.subscription([topic], 1), c3: h.subscription([topic], 2)}
    v0 = struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">ii", 1, 1)  # v0: no generation
    subs[c1] = h.sub_v2([topic], [tp(topic, 0), tp(topic, 2)], 1, 0)
    subs[c2] = Subscription([topic], v0, [], -1)
    a = h.assign(subs)
    assert all(len(a[c]) == 1 for c in (c1, c2, c3))
    assert set(a[c1]) <= {tp(topic, 0), tp(topic, 2)}
    assert a[c2] == [tp(topic, 1)]


def test_sticky_member_data_honours_user_data():
    s = StickyAssignor()
    s.on_assignment(__import__("consumer.assignors", fromlist=["Assignment"]).Assignment([tp(topic, 1)]), GEN)
    ud = s.subscription_user_data({topic})
    sub = Subscription([topic], ud, [tp(topic, 0)])
    assert s.member_data(sub) == ([tp(topic, 1)], GEN)
    owned = [tp(topic1, 0), tp(topic2, 1)]
    sub = Subscription([topic], s.subscription_user_data({topic}, owned, GEN - 1), [], GEN)
    assert s.member_data(sub) == (owned, GEN - 1)


@pytest.mark.parametrize("kind", KINDS)
def test_assignor_with_old_version_subscriptions(kind):
    h = StickyHarness(kind)
    h.add_topic(topic1, 3)
    if kind == "sticky":
        from consumer.assignors import encode_sticky_user_data as enc
        v0 = Subscription([topic1], enc([tp(topic1, 0)], GEN), [], -1)
        v1 = Subscription([topic1], enc([tp(topic1, 1)], GEN), [tp(topic1, 1)], -1)
    else:
        from consumer.assignors import Assignment
        h.assignor.on_assignment(Assignment([tp(topic1, 0)]), GEN)
        v0 = Subscription([topic1], h.assignor.subscription_user_data({topic1}), [tp(topic1, 0)], -1)
        h.assignor.on_assignment(Assignment([tp(topic1, 1)]), GEN)
        v1 = Subscription([topic1], h.assignor.subscription_user_data({topic1}), [tp(topic1, 1)], -1)
    subs = {c1: v0, c2: v1, c3: h.sub_v2([topic1], [], GEN, 2)}
    a = h.assign(subs)
    assert a == {c1: [tp(topic1, 0)], c2: [tp(topic1, 1)], c3: [tp(topic1, 2)]}


# --- CooperativeStickyAssignorTest --------------------------------------------------------------------------

def test_cooperative_encode_and_decode_generation():
    from consumer.assignors import Assignment
    a = CooperativeStickyAssignor()
    sub = Subscription([topic], a.subscription_user_data({topic}))
    assert a.member_data(sub)[1] == -1
    a.on_assignment(Assignment([]), 10)
    sub = Subscription([topic], a.subscription_user_data({topic}))
    assert a.member_data(sub)[1] == 10
    assert CooperativeStickyAssignor().member_data(Subscription([topic]))[1] is None


def test_cooperative_member_data_sources():
    from consumer.assignors import Assignment
    a = CooperativeStickyAssignor()
    a.on_assignment(Assignment([tp(topic, 1)]), GEN)
    sub = Subscription([topic], a.subscription_user_data({topic}), [tp(topic, 0)])
    assert a.member_data(sub) == ([tp(topic, 0)], GEN)  # owned from the subscription, generation from user data
    ud = a.subscription_user_data({topic}, generation_id=GEN - 1)
    assert a.member_data(Subscription([topic], ud, [], GEN)) == ([], GEN)


def test_cooperative_uniform_subscription_transfer_ownership_list_is_right():
    a = CooperativeStickyAssignor()
    prack = {topic1: [[x] for x in ("a", "b", "a", "b")]}  # rf 1 over racks a, b
    subs = {"c0": Subscription([topic1], a.subscription_user_data({topic1}), [tp(topic1, 0), tp(topic1, 1)], GEN,
                               rack_id="a"),
            "c1": Subscription([topic1], a.subscription_user_data({topic1}), [tp(topic1, 2), tp(topic1, 3)], GEN,
                               rack_id="b")}
    a.assign({topic1: 4}, subs, partition_racks=prack)
    assert len(a.partitions_transferring_ownership) == 2

"""Kafka's RangeAssignorTest and RoundRobinAssignorTest cases, ported (plus Javadoc examples)."""

from __future__ import annotations

import pytest

from consumer.assignors import RangeAssignor, RoundRobinAssignor, Subscription
from _assignor_helpers import (ALL_RACKS, RACK_CONFIGS, null_racks, partition_racks_num, racks, tp,
                               verify_rack_assignment)

topic1, topic2 = "topic1", "topic2"
c1, c2, c3 = "consumer1", "consumer2", "consumer3"


class RangeHarness:
    """RangeAssignorTest.initializeRacks + subscription(topics, consumerIndex)."""

    def __init__(self, rack_config: str, max_consumers: int = 3):
        self.assignor = RangeAssignor()
        self.rf = max_consumers
        self.num_broker_racks = max_consumers if rack_config != "NO_BROKER_RACK" else 0
        self.has_consumer_rack = rack_config != "NO_CONSUMER_RACK"
        self.assignor.prefer_rack_aware_logic = True
        self.counts: dict[str, int] = {}
        self.racks: dict[str, list] = {}

    def topic(self, t: str, n: int) -> None:
        self.counts[t] = n
        self.racks[t] = partition_racks_num(t, n, self.rf, self.num_broker_racks, 0)

    def sub(self, topics, idx: int, instance=None) -> Subscription:
        nr = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        rack = ALL_RACKS[idx % nr] if self.has_consumer_rack else None
        return Subscription(topics, None, [], -1, group_instance_id=instance, rack_id=rack)

    def assign(self, subs) -> dict:
        r = self.assignor.assign(self.counts, subs, partition_racks=self.racks)
        return {m: set(a.partitions) for m, a in r.items()}


@pytest.fixture(params=RACK_CONFIGS)
def rh(request):
    return RangeHarness(request.param)


def test_range_one_consumer_no_topic():
    assert RangeAssignor().assign({}, {c1: Subscription([])})[c1].partitions == ()


def test_range_one_consumer_nonexistent_topic():
    assert RangeAssignor().assign({}, {c1: Subscription([topic1])})[c1].partitions == ()


def test_range_one_consumer_one_topic(rh):
    rh.topic(topic1, 3)
    assert rh.assign({c1: rh.sub([topic1], 0)}) == {c1: {tp(topic1, 0), tp(topic1, 1), tp(topic1, 2)}}


def test_range_only_assigns_partitions_from_subscribed_topics(rh):
    rh.topic(topic1, 3)
    rh.topic("other", 3)
    assert rh.assign({c1: rh.sub([topic1], 0)}) == {c1: {tp(topic1, 0), tp(topic1, 1), tp(topic1, 2)}}


def test_range_one_consumer_multiple_topics(rh):
    rh.topic(topic1, 1)
    rh.topic(topic2, 2)
    assert rh.assign({c1: rh.sub([topic1, topic2], 0)}) == {c1: {tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)}}


def test_range_two_consumers_one_topic_one_partition(rh):
    rh.topic(topic1, 1)
    a = rh.assign({c1: rh.sub([topic1], 0), c2: rh.sub([topic1], 1)})
    assert a == {c1: {tp(topic1, 0)}, c2: set()}


def test_range_two_consumers_one_topic_two_partitions(rh):
    rh.topic(topic1, 2)
    a = rh.assign({c1: rh.sub([topic1], 0), c2: rh.sub([topic1], 1)})
    assert a == {c1: {tp(topic1, 0)}, c2: {tp(topic1, 1)}}


def test_range_multiple_consumers_mixed_topics(rh):
    rh.topic(topic1, 3)
    rh.topic(topic2, 2)
    a = rh.assign({c1: rh.sub([topic1], 0), c2: rh.sub([topic1, topic2], 1), c3: rh.sub([topic1], 2)})
    assert a == {c1: {tp(topic1, 0)}, c2: {tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)}, c3: {tp(topic1, 2)}}


def test_range_two_consumers_two_topics_six_partitions(rh):
    rh.topic(topic1, 3)
    rh.topic(topic2, 3)
    a = rh.assign({c1: rh.sub([topic1, topic2], 0), c2: rh.sub([topic1, topic2], 1)})
    assert a == {c1: {tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)}, c2: {tp(topic1, 2), tp(topic2, 2)}}


def test_range_two_static_consumers_compare_on_instance_id(rh):
    rh.topic(topic1, 3)
    rh.topic(topic2, 3)
    a = rh.assign({"consumer-b": rh.sub([topic1, topic2], 0, "instance1"),
                   "consumer-a": rh.sub([topic1, topic2], 1, "instance2")})
    assert a["consumer-b"] == {tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)}
    assert a["consumer-a"] == {tp(topic1, 2), tp(topic2, 2)}


def test_range_static_member_ranks_before_dynamic(rh):
    rh.topic(topic1, 3)
    rh.topic(topic2, 3)
    a = rh.assign({"consumer-b": rh.sub([topic1, topic2], 0, "instance1"),
                   "consumer-a": rh.sub([topic1, topic2], 1)})
    assert a["consumer-b"] == {tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)}
    assert a["consumer-a"] == {tp(topic1, 2), tp(topic2, 2)}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_range_static_member_assignment_persistent(rack_config):
    rh = RangeHarness(rack_config, 5)
    rh.topic(topic1, 5)
    rh.topic(topic2, 4)
    subs = {f"consumer{i + 1}": rh.sub([topic1, topic2], i, f"instance{i + 1}") for i in range(3)}
    subs["consumer4"] = rh.sub([topic1, topic2], 3)
    expected = {c1: {tp(topic1, 0), tp(topic1, 1), tp(topic2, 0)}, c2: {tp(topic1, 2), tp(topic2, 1)},
                c3: {tp(topic1, 3), tp(topic2, 2)}, "consumer4": {tp(topic1, 4), tp(topic2, 3)}}
    assert rh.assign(subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = rh.sub([topic1, topic2], 4)
    expected["consumer5"] = expected.pop("consumer4")
    assert rh.assign(subs) == expected


def _by_instance(rh, subs):
    a = rh.assign(subs)
    return {s.group_instance_id: a[m] for m, s in subs.items() if s.group_instance_id}


def test_range_static_member_assignment_persistent_after_member_id_changes(rh):
    rh.topic(topic1, 5)
    rh.topic(topic2, 5)
    subs = {f"consumer{i + 1}": rh.sub([topic1, topic2], i, f"instance{i + 1}") for i in range(3)}
    expected = {"instance1": {tp(topic1, 0), tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)},
                "instance2": {tp(topic1, 2), tp(topic1, 3), tp(topic2, 2), tp(topic2, 3)},
                "instance3": {tp(topic1, 4), tp(topic2, 4)}}
    assert _by_instance(rh, subs) == expected
    subs["consumer4"] = subs.pop(c3)
    subs["consumer5"] = subs.pop(c2)
    assert _by_instance(rh, subs) == expected


def test_range_rack_aware_static_member_persistent_after_member_id_changes():
    a = RangeAssignor()
    a.prefer_rack_aware_logic = True
    counts = {topic1: 5, topic2: 5}
    prack = {t: partition_racks_num(t, 5, 2, 3, 0) for t in counts}
    subs = {f"consumer{i + 1}": Subscription([topic1, topic2], None, [], -1, f"instance{i + 1}", ALL_RACKS[i])
            for i in range(3)}

    def by_instance():
        r = a.assign(counts, subs, partition_racks=prack)
        return {s.group_instance_id: set(r[m].partitions) for m, s in subs.items()}

    expected = {"instance1": {tp(topic1, 0), tp(topic1, 2), tp(topic2, 0), tp(topic2, 2)},
                "instance2": {tp(topic1, 1), tp(topic1, 3), tp(topic2, 1), tp(topic2, 3)},
                "instance3": {tp(topic1, 4), tp(topic2, 4)}}
    assert by_instance() == expected
    subs["consumer4"] = subs.pop(c3)
    subs["consumer5"] = subs.pop(c2)
    assert by_instance() == expected


T3 = {"t1": 6, "t2": 7, "t3": 2}


def _non_rack_aware(topics, consumer_topics, expected):
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 3, null_racks(3), racks(3), consumer_topics, None, expected, -1)
    verify_rack_assignment(a, topics, 3, racks(3), null_racks(3), consumer_topics, None, expected, -1)
    verify_rack_assignment(a, topics, 3, racks(3), racks(3), consumer_topics, None, expected, 0)
    verify_rack_assignment(a, topics, 4, racks(4), racks(3), consumer_topics, None, expected, 0)
    verify_rack_assignment(a, topics, 3, racks(3), ["d", "e", "f"], consumer_topics, None, expected, -1)
    verify_rack_assignment(a, topics, 3, racks(3), [None, "e", "f"], consumer_topics, None, expected, -1)
    a.prefer_rack_aware_logic = True
    verify_rack_assignment(a, topics, 3, racks(3), racks(3), consumer_topics, None, expected, 0)


def test_range_rack_aware_uniform_subscription():
    all_t = ["t1", "t2", "t3"]
    ct = [all_t] * 3
    _non_rack_aware(T3, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                             "t1-4, t1-5, t2-5, t2-6"])
    a = RangeAssignor()
    verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, None,
                           ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0",
                            "t1-2, t1-5, t2-2, t2-5, t3-1"], 0)
    verify_rack_assignment(a, T3, 2, racks(3), racks(3), ct, None,
                           ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0",
                            "t1-4, t1-5, t2-5, t2-6"], 1)
    verify_rack_assignment(a, T3, 3, racks(2), racks(3), ct, None,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                            "t1-4, t1-5, t2-5, t2-6"], 4)


def test_range_rack_aware_non_equal_subscription():
    all_t = ["t1", "t2", "t3"]
    ct = [all_t, all_t, ["t1", "t3"]]
    _non_rack_aware(T3, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                             "t1-4, t1-5"])
    a = RangeAssignor()
    verify_rack_assignment(a, T3, 1, racks(3), racks(3), ct, None,
                           ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                            "t1-2, t1-5, t3-1"], 2)
    verify_rack_assignment(a, T3, 2, racks(3), racks(3), ct, None,
                           ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                            "t1-4, t1-5"], 0)
    verify_rack_assignment(a, T3, 3, racks(2), racks(3), ct, None,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                            "t1-4, t1-5"], 2)


def test_range_rack_aware_uniform_partitions():
    t = {"t1": 5, "t2": 5, "t3": 5}
    all_t = ["t1", "t2", "t3"]
    ct = [all_t] * 3
    non = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    _non_rack_aware(t, ct, non)
    a = RangeAssignor()
    verify_rack_assignment(a, t, 1, racks(3), racks(3), ct, None, non, 10)
    verify_rack_assignment(a, t, 2, racks(3), racks(3), ct, None, non, 5)
    verify_rack_assignment(a, t, 3, racks(2), racks(3), ct, None, non, 3)


def test_range_rack_aware_uniform_partitions_non_equal_subscription():
    t = {"t1": 5, "t2": 5, "t3": 5}
    all_t = ["t1", "t2", "t3"]
    ct = [all_t, all_t, ["t1", "t3"]]
    _non_rack_aware(t, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                            "t1-4, t3-4"])
    a = RangeAssignor()
    verify_rack_assignment(a, t, 1, racks(3), racks(3), ct, None,
                           ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                            "t1-4, t3-4"], 9)
    verify_rack_assignment(a, t, 2, racks(3), racks(3), ct, None,
                           ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
                            "t1-1, t1-4, t3-1, t3-4"], 0)
    verify_rack_assignment(a, t, 3, racks(2), racks(3), ct, None,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                            "t1-4, t3-4"], 2)


def test_range_rack_aware_co_partitioning():
    t = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    ct = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    cr = [ALL_RACKS[0], ALL_RACKS[1], ALL_RACKS[1], ALL_RACKS[0]]
    non = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    a = RangeAssignor()
    verify_rack_assignment(a, t, 3, racks(2), cr, ct, None, non, -1)
    verify_rack_assignment(a, t, 2, racks(2), cr, ct, None, non, 0)
    verify_rack_assignment(a, t, 1, racks(2), cr, ct, None,
                           ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
                            "t3-1, t4-1", "t3-0, t4-0"], 0)
    all_t = ["t1", "t2", "t3", "t4"]
    ct = [all_t] * 4
    non = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    verify_rack_assignment(a, t, 3, racks(2), cr, ct, None, non, -1)
    verify_rack_assignment(a, t, 2, racks(2), cr, ct, None, non, 0)
    verify_rack_assignment(a, t, 1, racks(2), cr, ct, None,
                           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
                            "t1-5, t2-5", "t1-4, t2-4"], 0)
    verify_rack_assignment(a, t, 1, racks(3), cr, ct, None,
                           ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                            "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_range_co_partitioned_assignment_with_same_subscription():
    t = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    tl = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]
    ct = [tl] * 3
    cr = ALL_RACKS[:3]
    non = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
           "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]
    a = RangeAssignor()
    verify_rack_assignment(a, t, 3, null_racks(3), cr, ct, None, non, -1)
    a.prefer_rack_aware_logic = True
    verify_rack_assignment(a, t, 3, racks(3), cr, ct, None, non, 0)
    verify_rack_assignment(a, t, 2, racks(3), cr, ct, None,
                           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
                            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
                            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0)


# --- RoundRobinAssignorTest -----------------------------------------------------------------------------------

def rr(counts, subs):
    return {m: list(a.partitions) for m, a in RoundRobinAssignor().assign(counts, subs).items()}


def test_roundrobin_one_consumer_no_topic_and_nonexistent_topic():
    assert rr({}, {c1: Subscription([])}) == {c1: []}
    assert rr({}, {c1: Subscription([topic1])}) == {c1: []}


def test_roundrobin_one_consumer_one_topic_and_unsubscribed_topic():
    assert rr({topic1: 3, "other": 3}, {c1: Subscription([topic1])}) == \
        {c1: [tp(topic1, 0), tp(topic1, 1), tp(topic1, 2)]}


def test_roundrobin_one_consumer_multiple_topics():
    assert rr({topic1: 1, topic2: 2}, {c1: Subscription([topic1, topic2])}) == \
        {c1: [tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)]}


def test_roundrobin_two_consumers_one_topic():
    assert rr({topic1: 1}, {c1: Subscription([topic1]), c2: Subscription([topic1])}) == {c1: [tp(topic1, 0)], c2: []}
    assert rr({topic1: 2}, {c1: Subscription([topic1]), c2: Subscription([topic1])}) == \
        {c1: [tp(topic1, 0)], c2: [tp(topic1, 1)]}


def test_roundrobin_multiple_consumers_mixed_topics():
    a = rr({topic1: 3, topic2: 2}, {c1: Subscription([topic1]), c2: Subscription([topic1, topic2]),
                                   c3: Subscription([topic1])})
    assert a == {c1: [tp(topic1, 0)], c2: [tp(topic1, 1), tp(topic2, 0), tp(topic2, 1)], c3: [tp(topic1, 2)]}


def test_roundrobin_two_consumers_two_topics_six_partitions():
    a = rr({topic1: 3, topic2: 3}, {c1: Subscription([topic1, topic2]), c2: Subscription([topic1, topic2])})
    assert a == {c1: [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)], c2: [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]}


def test_roundrobin_static_members_ordered_by_instance_id():
    subs = {"consumer-b": Subscription([topic1, topic2], group_instance_id="instance1"),
            "consumer-a": Subscription([topic1, topic2], group_instance_id="instance2")}
    a = rr({topic1: 3, topic2: 3}, subs)
    assert a["consumer-b"] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]
    assert a["consumer-a"] == [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]
    subs["consumer-a"] = Subscription([topic1, topic2])  # dynamic ranks after static
    a = rr({topic1: 3, topic2: 3}, subs)
    assert a["consumer-b"] == [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)]


def test_roundrobin_static_member_persistent_after_member_id_changes():
    counts = {topic1: 5, topic2: 5}
    subs = {f"consumer{i + 1}": Subscription([topic1, topic2], group_instance_id=f"instance{i + 1}")
            for i in range(3)}

    def by_instance():
        r = rr(counts, subs)
        return {s.group_instance_id: r[m] for m, s in subs.items()}

    before = by_instance()
    assert before["instance1"] == [tp(topic1, 0), tp(topic1, 3), tp(topic2, 1), tp(topic2, 4)]
    subs["consumer4"] = subs.pop(c3)
    subs["consumer5"] = subs.pop(c2)
    assert by_instance() == before

"""Java semantics helpers, the user-data codecs and the registry."""

from __future__ import annotations

import struct

import pytest

from consumer.assignors import (AssignorNotFound, CooperativeStickyAssignor, RangeAssignor, StickyAssignor,
                                Subscription, decode_cooperative_user_data, decode_sticky_user_data,
                                encode_cooperative_user_data, encode_sticky_user_data, get_assignor)
from protocol.java import hashmap_order, java_sorted, java_string_hash, topic_partition_hash
from _assignor_helpers import tp


def test_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # the classic Integer.MIN_VALUE hash
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units


def test_topic_partition_hash():
    assert topic_partition_hash(java_string_hash("t"), 0) == 31 * 31 + java_string_hash("t")


def test_java_string_order_uses_utf16_code_units():
    # U+FFFF sorts after U+10000 in Java (surrogate 0xD800 < 0xFFFF), the reverse of Python's order
    assert java_sorted(["\uffff", "\U00010000"]) == ["\U00010000", "\uffff"]
    assert sorted(["\uffff", "\U00010000"]) == ["\uffff", "\U00010000"]
    assert java_sorted(["b", "a", "B"]) == ["B", "a", "b"]


def test_member_order_with_astral_member_ids():
    subs = {"\uffff": Subscription(["t"]), "\U00010000": Subscription(["t"])}
    a = RangeAssignor().assign({"t": 2}, subs)
    assert a["\U00010000"].partitions == (tp("t", 0),)


def test_hashmap_order_for_small_maps_is_bucket_order():
    # (h ^ h >>> 16) & 15 puts "consumer1".."consumer3" in buckets 12, 11, 10: Java iterates them backwards.
    # Kafka's testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers depends on exactly this order.
    assert hashmap_order(["consumer1", "consumer2", "consumer3"]) == ["consumer3", "consumer2", "consumer1"]


def test_results_depend_on_member_order_only_where_javas_do():
    # The leader's subscriptions HashMap is filled in JoinGroup-response order (the order of `subscriptions`).
    # Members in distinct buckets: that order does not matter.
    counts = {"a": 5, "b": 3, "c": 7}
    subs = {"m1": Subscription(["a", "b"]), "m2": Subscription(["b", "c"]), "m3": Subscription(["a", "c", "b"])}
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        r1 = get_assignor(name).assign(counts, subs)
        r2 = get_assignor(name).assign(dict(reversed(counts.items())), dict(reversed(subs.items())))
        assert r1 == r2, name


def test_members_sharing_a_bucket_iterate_in_join_group_order():
    # "Aa" and "BB" have the same String.hashCode (2112, bucket 0); "C" and "D" are in buckets 3 and 4. Derived by
    # hand from AbstractStickyAssignor's constrained algorithm: 5 partitions over 4 members, minQuota 1,
    # maxQuota 2, one member may keep 2. The member met first keeps both of its owned partitions, the second keeps
    # one; the unassigned ones go round-robin to C then D. Cooperative: a partition changing owner is withheld.
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    owned = {"Aa": [tp("t", 0), tp("t", 1)], "BB": [tp("t", 2), tp("t", 3)], "C": [], "D": []}
    for first, second in (("Aa", "BB"), ("BB", "Aa")):
        moved = owned[second][1].partition  # the second member's revoked partition, C's next round
        subs = {m: Subscription(["t"], None, tuple(owned[m]), 1) for m in (first, second, "C", "D")}
        result = CooperativeStickyAssignor().assign({"t": 5}, subs)
        assert result[first].partitions == tuple(owned[first])
        assert result[second].partitions == (owned[second][0],)
        assert result["C"].partitions == () and result["D"].partitions == (tp("t", 4),)
        eager = {m: Subscription(["t"], encode_sticky_user_data(owned[m], 1)) for m in (first, second, "C", "D")}
        result = StickyAssignor().assign({"t": 5}, eager)
        assert result["C"].partitions == (tp("t", moved),) and result["D"].partitions == (tp("t", 4),)


def test_range_list_follows_partitions_per_topic_order():
    # AbstractPartitionAssignor.assign puts the topics into partitionsPerTopic in the iteration order of
    # allSubscribedTopics, a HashSet filled from the members' topic lists; "Aa" and "BB" share a bucket, so the
    # member's list order decides, and the range list follows it.
    r = RangeAssignor().assign({"Aa": 1, "BB": 1}, {"m": Subscription(["BB", "Aa"])})
    assert r["m"].partitions == (tp("BB", 0), tp("Aa", 0))
    r = RangeAssignor().assign({"Aa": 1, "BB": 1}, {"m": Subscription(["Aa", "BB"])})
    assert r["m"].partitions == (tp("Aa", 0), tp("BB", 0))


def test_sticky_user_data_topic_order_follows_compute_if_absent():
    # serializeTopicPartitionAssignment groups with computeIfAbsent: a new key goes to the *head* of its bucket.
    # "Aa" and "BB" share bucket 0, so the topic seen second is written first.
    data = encode_sticky_user_data([tp("Aa", 0), tp("BB", 0)], 1)
    assert decode_sticky_user_data(data) == ([("BB", [0]), ("Aa", [0])], 1)


def test_sticky_user_data_round_trip_and_wire_format():
    data = encode_sticky_user_data([tp("t", 1), tp("t", 0)], 5)
    assert data == struct.pack(">ih", 1, 1) + b"t" + struct.pack(">iiii", 2, 1, 0, 5)
    assert decode_sticky_user_data(data) == ([("t", [1, 0])], 5)


def test_sticky_user_data_v0_and_garbage():
    v0 = struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ii", 1, 2)
    assert decode_sticky_user_data(v0) == ([("t", [2])], None)
    assert decode_sticky_user_data(b"\x00\x00") == ([], -1)
    assert decode_sticky_user_data(struct.pack(">i", -3)) == ([], -1)
    assert decode_sticky_user_data(struct.pack(">ih", 1, -1)) == ([], -1)
    assert decode_sticky_user_data(None) == ([], None)
    assert decode_sticky_user_data(b"") == ([], None)


def test_garbage_user_data_is_ignored_by_the_assignor():
    subs = {"a": Subscription(["t"], b"\xff\xff\xff", (), 3), "b": Subscription(["t"], None)}
    r = StickyAssignor().assign({"t": 4}, subs)
    assert sorted(len(v.partitions) for v in r.values()) == [2, 2]


def test_cooperative_user_data():
    assert encode_cooperative_user_data(7) == struct.pack(">i", 7)
    assert decode_cooperative_user_data(struct.pack(">i", 7)) == 7
    assert decode_cooperative_user_data(b"\x01") == -1
    assert decode_cooperative_user_data(None) is None


def test_registry():
    assert get_assignor("range").name == "range"
    assert get_assignor("org.apache.kafka.clients.consumer.CooperativeStickyAssignor").rebalance_protocols == \
        ("COOPERATIVE", "EAGER")
    assert get_assignor("consumer.assignors:StickyAssignor").name == "sticky"
    assert get_assignor("consumer.assignors.range.RangeAssignor").name == "range"
    assert isinstance(get_assignor("sticky"), StickyAssignor)
    assert get_assignor("sticky") is not get_assignor("sticky")
    for bad in ("nope", "no.such.module:X", "consumer.assignors:Nope", ""):
        with pytest.raises(AssignorNotFound):
            get_assignor(bad)


def test_every_member_gets_an_entry_and_missing_topics_yield_nothing():
    subs = {"a": Subscription(["gone", "empty"]), "b": Subscription(["t"]), "c": Subscription([])}
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        r = get_assignor(name).assign({"t": 1, "empty": 0}, subs)
        assert set(r) == {"a", "b", "c"}
        assert r["a"].partitions == () and r["c"].partitions == ()
        assert r["b"].partitions == (tp("t", 0),)


def test_cooperative_protocols():
    assert CooperativeStickyAssignor.rebalance_protocols == ("COOPERATIVE", "EAGER")
    assert StickyAssignor.rebalance_protocols == ("EAGER",)

"""Worked examples from the seeds (../shared/seeds/002_*, 003_*) and the assignors' Javadoc."""

from __future__ import annotations

from consumer.assignors import Subscription, encode_sticky_user_data, get_assignor
from _assignor_helpers import tp


def run(strategy, counts, topics_by_member, previous=None, generation=1):
    a = get_assignor(strategy)
    subs = {}
    for m, topics in topics_by_member.items():
        owned = (previous or {}).get(m, [])
        if strategy == "sticky":
            ud = encode_sticky_user_data(owned, generation) if previous is not None else None
            subs[m] = Subscription(topics, ud, (), generation if previous is not None else -1)
        else:
            subs[m] = Subscription(topics, None, owned, generation if previous is not None else -1)
    return {m: list(v.partitions) for m, v in a.assign(counts, subs).items()}


FIVE_TOPICS = {f"t{i}": 3 for i in range(5)}


def test_002_range_two_consumers_five_topics_three_partitions_is_10_and_5():
    a = run("range", FIVE_TOPICS, {"C0": list(FIVE_TOPICS), "C1": list(FIVE_TOPICS)})
    assert (len(a["C0"]), len(a["C1"])) == (10, 5)
    for i in range(5):  # first consumer in lexicographic order gets n/c + 1 of every topic
        assert {p for p in a["C0"] if p.topic == f"t{i}"} == {tp(f"t{i}", 0), tp(f"t{i}", 1)}


def test_002_roundrobin_same_input_is_8_and_7():
    a = run("roundrobin", FIVE_TOPICS, {"C0": list(FIVE_TOPICS), "C1": list(FIVE_TOPICS)})
    assert (len(a["C0"]), len(a["C1"])) == (8, 7)


UNEQUAL_COUNTS = {"t0": 1, "t1": 2, "t2": 3}
ROUNDROBIN_UNEQUAL = {"C0": [tp("t0", 0)], "C1": [tp("t1", 0)],
                      "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


def test_002_roundrobin_unequal_subscriptions():
    # 002: C0 -> t0, C1 -> t0,t1, C2 -> t1,t2 ; t1p1 lands on the last consumer although C1 could take it
    a = run("roundrobin", UNEQUAL_COUNTS, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t1", "t2"]})
    assert a == ROUNDROBIN_UNEQUAL


def test_003_roundrobin_unequal_subscriptions_javadoc_variant():
    # 003 / StickyAssignor Javadoc example 2: C2 subscribes to t0, t1, t2
    a = run("roundrobin", UNEQUAL_COUNTS, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    assert a == ROUNDROBIN_UNEQUAL


def test_003_range_three_consumers_two_topics_four_partitions():
    counts = {"T0": 4, "T1": 4}
    a = run("range", counts, {c: ["T0", "T1"] for c in ("C0", "C1", "C2")})
    assert {m: set(v) for m, v in a.items()} == {
        "C0": {tp("T0", 0), tp("T0", 1), tp("T1", 0), tp("T1", 1)},
        "C1": {tp("T0", 2), tp("T1", 2)},
        "C2": {tp("T0", 3), tp("T1", 3)}}


FOUR_TOPICS = {f"t{i}": 2 for i in range(4)}


def test_003_sticky_keeps_c0_and_c2_when_c1_leaves():
    members = {c: list(FOUR_TOPICS) for c in ("C0", "C1", "C2")}
    first = run("sticky", FOUR_TOPICS, members)
    # same as round robin the first time (seed 003, StickyAssignor Javadoc example 1)
    assert first == {"C0": [tp("t0", 0), tp("t1", 1), tp("t3", 0)], "C1": [tp("t0", 1), tp("t2", 0), tp("t3", 1)],
                     "C2": [tp("t1", 0), tp("t2", 1)]}
    assert first == run("roundrobin", FOUR_TOPICS, members)
    del members["C1"]
    second = run("sticky", FOUR_TOPICS, members, previous={"C0": first["C0"], "C2": first["C2"]})
    assert set(first["C0"]) <= set(second["C0"]) and set(first["C2"]) <= set(second["C2"])
    assert len(second["C0"]) == len(second["C2"]) == 4
    # round robin reshuffles instead (Javadoc): C0 [t0p0, t1p0, t2p0, t3p0], C2 [t0p1, t1p1, t2p1, t3p1]
    rr = run("roundrobin", FOUR_TOPICS, members)
    assert rr == {"C0": [tp(f"t{i}", 0) for i in range(4)], "C2": [tp(f"t{i}", 1) for i in range(4)]}


def test_003_sticky_unequal_subscriptions_then_c0_leaves():
    members = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    first = run("sticky", UNEQUAL_COUNTS, members)
    assert {m: set(v) for m, v in first.items()} == {
        "C0": {tp("t0", 0)}, "C1": {tp("t1", 0), tp("t1", 1)}, "C2": {tp("t2", 0), tp("t2", 1), tp("t2", 2)}}
    del members["C0"]
    second = run("sticky", UNEQUAL_COUNTS, members, previous=first)
    # sticky preserves 5 assignments: C1 [t1p0, t1p1, t0p0], C2 [t2p0, t2p1, t2p2]
    assert {m: set(v) for m, v in second.items()} == {
        "C1": {tp("t1", 0), tp("t1", 1), tp("t0", 0)}, "C2": {tp("t2", 0), tp("t2", 1), tp("t2", 2)}}
    # round robin preserves 3: C1 [t0p0, t1p1], C2 [t1p0, t2p0, t2p1, t2p2]
    assert run("roundrobin", UNEQUAL_COUNTS, members) == {
        "C1": [tp("t0", 0), tp("t1", 1)], "C2": [tp("t1", 0), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


def test_range_javadoc_example():
    a = run("range", {"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    assert {m: set(v) for m, v in a.items()} == {"C0": {tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)},
                                                  "C1": {tp("t0", 2), tp("t1", 2)}}

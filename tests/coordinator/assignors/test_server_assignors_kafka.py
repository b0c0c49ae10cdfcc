"""Kafka's own server-side assignor tests, ported table-driven (Kafka 4.4, group-coordinator module):
``UniformHomogeneousAssignmentBuilderTest``, ``UniformHeterogeneousAssignmentBuilderTest``, ``RangeAssignorTest``,
``CommonAssignorTests`` and ``GroupSpecImplTest``. Expected assignments are Kafka's, compared as sets (as Kafka's
``assertAssignment`` compares ``Set``s). Test names are Kafka's.
"""

from __future__ import annotations

import itertools
import random

import pytest

from _server_assignor_helpers import T1, TOPIC_IDS, as_sets, member, run, topics_of
from coordinator.assignors import PartitionAssignorError, assign_target
from coordinator.assignors._spec import build_group_spec
from protocol.java import hashmap_order, uuid_string

H, X = "homogeneous", "heterogeneous"


def test_kafka_test_member_ids_iterate_in_treemap_order():
    # Kafka's tests put members in a TreeMap; kgroup iterates a HashMap, as the coordinator does. For the ids the
    # tests use the two orders agree, so Kafka's expectations apply unchanged.
    assert hashmap_order(["A", "B", "C"]) == ["A", "B", "C"]
    assert hashmap_order(["C", "A", "B"]) == ["A", "B", "C"]


# (kafka test name, assignor, subscription type, topics, members, ordered-current members, expected or exception)
CASES = [
    # --- UniformHomogeneousAssignmentBuilderTest ---
    ("testOneMemberNoTopicSubscription", "uniform", H, {"T1": 3},
     {"A": member([])}, (), {"A": {}}),
    ("testOneMemberSubscribedToNonexistentTopic", "uniform", H, {"T1": 3},
     {"A": member(["T2"])}, (), PartitionAssignorError),
    ("testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks", "uniform", H, {"T1": 3, "T3": 2},
     {"A": member(["T1", "T3"]), "B": member(["T1", "T3"])}, (),
     {"A": {"T3": {0, 1}}, "B": {"T1": {0, 1, 2}}}),
    ("testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", "uniform", H, {"T3": 2},
     {"A": member(["T3"]), "B": member(["T3"]), "C": member(["T3"])}, (),
     {"A": {}, "B": {"T3": {0}}, "C": {"T3": {1}}}),
    ("testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment", "uniform", H, {"T1": 3, "T2": 3},
     {"A": member(["T1", "T2"], {"T1": [0, 1], "T2": [0, 1]}), "B": member(["T1", "T2"], {"T1": [2], "T2": [2]})},
     ("A", "B"), {"A": {"T1": {0, 1}, "T2": {0}}, "B": {"T1": {2}, "T2": {1, 2}}}),
    ("testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics", "uniform", H, {"T1": 6, "T2": 5},
     {"A": member(["T1", "T2"], {"T1": [0, 2], "T2": [0]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [1, 2]})},
     ("A", "B"), {"A": {"T1": {0, 2}, "T2": {0, 3, 4}}, "B": {"T1": {1, 3, 4, 5}, "T2": {1, 2}}}),
    ("testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics", "uniform", H,
     {"T1": 3, "T2": 3},
     {"A": member(["T1", "T2"], {"T1": [0, 2], "T2": [0]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [1, 2]}),
      "C": member(["T1", "T2"])},
     ("A", "B"), {"A": {"T1": {0, 2}}, "B": {"T1": {1}, "T2": {1}}, "C": {"T2": {0, 2}}}),
    ("testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics", "uniform", H,
     {"T1": 3, "T2": 3},
     {"A": member(["T1", "T2"], {"T1": [0], "T2": [0]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [1]})},
     (), {"A": {"T1": {0}, "T2": {0, 2}}, "B": {"T1": {1, 2}, "T2": {1}}}),
    # KAFKA-18688 (4.1's OptimizedUniformAssignmentBuilderTest; folded into CommonAssignorTests since): A and C
    # already hold the two extra partitions and keep them.
    ("testReassignmentStickinessWhenAlreadyBalanced", "uniform", H, {"T1": 5},
     {"A": member(["T1"], {"T1": [0, 3]}), "B": member(["T1", "T2"], {"T1": [1]}),
      "C": member(["T1", "T2"], {"T1": [2, 4]})}, (),
     {"A": {"T1": {0, 3}}, "B": {"T1": {1}}, "C": {"T1": {2, 4}}}),
    ("testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", "uniform", H,
     {"T1": 2, "T2": 2},
     {"A": member(["T2"], {"T1": [0], "T2": [0]}), "B": member(["T2"], {"T1": [1], "T2": [1]})},
     (), {"A": {"T2": {0}}, "B": {"T2": {1}}}),
    # --- UniformHeterogeneousAssignmentBuilderTest ---
    ("testTwoMembersNoTopicSubscription", "uniform", X, {"T1": 3},
     {"A": member([]), "B": member([])}, (), {"A": {}, "B": {}}),
    ("testTwoMembersSubscribedToNonexistentTopics", "uniform", X, {"T1": 3},
     {"A": member(["T3"]), "B": member(["T2"])}, (), PartitionAssignorError),
    ("testFirstAssignmentTwoMembersTwoTopics", "uniform", X, {"T1": 3, "T3": 6},
     {"A": member(["T1", "T3"]), "B": member(["T3"])}, (),
     {"A": {"T1": {0, 1, 2}, "T3": {4}}, "B": {"T3": {0, 1, 2, 3, 5}}}),
    ("testFirstAssignmentNumMembersGreaterThanTotalNumPartitions", "uniform", X, {"T1": 2, "T3": 1},
     {"A": member(["T3"]), "B": member(["T3"]), "C": member(["T1"])}, (),
     {"A": {"T3": {0}}, "B": {}, "C": {"T1": {0, 1}}}),
    ("testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment", "uniform", X,
     {"T1": 6, "T2": 4, "T3": 4},
     {"A": member(["T1"], {"T1": [0, 1, 2]}), "B": member(["T1", "T2"], {"T1": [3], "T2": [0]}),
      "C": member(["T1", "T2", "T3"], {"T1": [4, 5], "T2": [1, 2, 3], "T3": [0, 1, 2, 3]})}, (),
     {"A": {"T1": {0, 1, 2, 5}}, "B": {"T1": {3}, "T2": {0, 1, 2, 3}}, "C": {"T1": {4}, "T3": {0, 1, 2, 3}}}),
    ("testReassignmentWhenPartitionsAreAddedForTwoMembers", "uniform", X, {"T1": 6, "T2": 5, "T3": 3, "T4": 3},
     {"A": member(["T1", "T3"], {"T1": [0, 1, 2, 3], "T3": [0, 1]}),
      "B": member(["T1", "T2", "T3", "T4"], {"T2": [0, 1, 2], "T4": [0, 1, 2]})}, (),
     {"A": {"T1": {0, 1, 2, 3, 4, 5}, "T3": {0, 1, 2}}, "B": {"T2": {0, 1, 2, 3, 4}, "T4": {0, 1, 2}}}),
    ("testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics", "uniform", X, {"T1": 6, "T2": 7},
     {"A": member(["T1"], {"T1": [0, 2], "T2": [0]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [1, 2]}),
      "C": member(["T1", "T2"])}, (),
     {"A": {"T1": {0, 2, 3, 4, 5}}, "B": {"T1": {1}, "T2": {1, 2, 6}}, "C": {"T2": {0, 3, 4, 5}}}),
    ("testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics", "uniform", X,
     {"T1": 3, "T2": 8, "T3": 3},
     {"A": member(["T1", "T3"], {"T1": [0, 1, 2], "T3": [0, 1]}), "B": member(["T2"], {"T2": [3, 4, 5, 6]})}, (),
     {"A": {"T1": {0, 1, 2}, "T3": {0, 1, 2}}, "B": {"T2": set(range(8))}}),
    ("testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", "uniform", X,
     {"T1": 3, "T2": 5},
     {"A": member(["T1"], {"T1": [0, 2], "T2": [1, 3]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [0, 2, 4]})},
     (), {"A": {"T1": {0, 1, 2}}, "B": {"T2": {0, 1, 2, 3, 4}}}),
    ("testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions", "uniform", X, {"T1": 2, "T2": 2, "T3": 2},
     {"A": member(["T1", "T2", "T3"], {"T1": [0, 1], "T2": [0, 1], "T3": [0, 1]}), "B": member(["T1", "T2", "T3"])},
     (), {"A": {"T2": {0}, "T3": {0, 1}}, "B": {"T1": {0, 1}, "T2": {1}}}),
    ("testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions", "uniform", X, {"T1": 3},
     {"A": member(["T1"]), "B": member([])}, (), {"A": {"T1": {0, 1, 2}}, "B": {}}),
    # --- RangeAssignorTest (server side) ---
    ("testOneMemberNoTopic", "range", H, {}, {"A": member([])}, (), {"A": {}}),
    ("testOneMemberSubscribedToNonExistentTopic", "range", H, {"T1": 3}, {"A": member(["T2"])}, (),
     PartitionAssignorError),
    ("testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions", "range", H, {"T1": 3, "T3": 2},
     {"A": member(["T1", "T3"]), "B": member(["T1", "T3"])}, (),
     {"A": {"T1": {0, 1}, "T3": {0}}, "B": {"T1": {2}, "T3": {1}}}),
    ("testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions", "range", X, {"T1": 3, "T2": 3, "T3": 2},
     {"A": member(["T1", "T2"]), "B": member(["T3"]), "C": member(["T2", "T3"])}, (),
     {"A": {"T1": {0, 1, 2}, "T2": {0, 1}}, "B": {"T3": {0}}, "C": {"T2": {2}, "T3": {1}}}),
    ("testFirstAssignmentNumMembersGreaterThanNumPartitions", "range", H, {"T1": 3, "T3": 2},
     {"A": member(["T1", "T3"]), "B": member(["T1", "T3"]), "C": member(["T1", "T3"])}, (),
     {"A": {"T1": {0}, "T3": {0}}, "B": {"T1": {1}, "T3": {1}}, "C": {"T1": {2}}}),
    ("testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded", "range", H, {"T1": 2, "T2": 2},
     {"A": member(["T1", "T2"], {"T1": [0], "T2": [0]}), "B": member(["T1", "T2"], {"T1": [1], "T2": [1]}),
      "C": member(["T1", "T2"])}, (),
     {"A": {"T1": {0}, "T2": {0}}, "B": {"T1": {1}, "T2": {1}}, "C": {}}),
    ("testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics", "range", H, {"T1": 4, "T2": 4},
     {"A": member(["T1", "T2"], {"T1": [0, 1], "T2": [0, 1]}), "B": member(["T1", "T2"], {"T1": [2], "T2": [2]})},
     (), {"A": {"T1": {0, 1}, "T2": {0, 1}}, "B": {"T1": {2, 3}, "T2": {2, 3}}}),
    ("testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics", "range", H,
     {"T1": 3, "T2": 3},
     {"A": member(["T1", "T2"], {"T1": [0, 1], "T2": [0, 1]}), "B": member(["T1", "T2"], {"T1": [2], "T2": [2]}),
      "C": member(["T1", "T2"])}, (),
     {"A": {"T1": {0}, "T2": {0}}, "B": {"T1": {1}, "T2": {1}}, "C": {"T1": {2}, "T2": {2}}}),
    ("testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics", "range", X,
     {"T1": 4, "T2": 3},
     {"A": member(["T1", "T2"], {"T1": [0, 1], "T2": [0, 1]}), "B": member(["T1", "T2"], {"T1": [2], "T2": [2]}),
      "C": member(["T1"])}, (),
     {"A": {"T1": {0, 1}, "T2": {0, 1}}, "B": {"T1": {2}, "T2": {2}}, "C": {"T1": {3}}}),
    ("testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics", "range", H,
     {"T1": 3, "T2": 3},
     {"B": member(["T1", "T2"], {"T1": [2], "T2": [2]})}, (), {"B": {"T1": {0, 1, 2}, "T2": {0, 1, 2}}}),
    ("testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics", "range", X,
     {"T1": 3, "T2": 3, "T3": 2},
     {"A": member(["T1"], {"T1": [0, 1, 2], "T2": [0]}), "B": member(["T1", "T2", "T3"], {"T2": [1]}),
      "C": member(["T2"], {"T2": [2], "T3": [0, 1]})}, (),
     {"A": {"T1": {0, 1}}, "B": {"T1": {2}, "T2": {0, 1}, "T3": {0, 1}}, "C": {"T2": {2}}}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{c[0]}" for c in CASES])
def test_kafka_assignor_case(case):
    _name, assignor, stype, counts, members, ordered, expected = case
    topics = topics_of(counts)
    if expected is PartitionAssignorError:
        with pytest.raises(PartitionAssignorError):
            run(assignor, members, topics, stype, ordered)
        return
    assert as_sets(run(assignor, members, topics, stype, ordered)) == expected


def test_unbalanced_previous_assignment_as_the_coordinator_replays_it():
    # testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment gives member A its previous assignment as
    # a LinkedHashMap (T1 first). The coordinator replays the record into a HashMap, which iterates T2 first
    # (Uuid.hashCode buckets of 16: T2 in 1, T1 in 10), so in a real group A keeps all of T2 and one of T1
    # instead. Derived by hand: quota 3; A: T2 {0,1} (2 <= 3, quota 1), T1 {0,1}: keeps 0, gives 1 back;
    # B: T2 {2}, T1 {2} (quota 1 left) takes T1-1.
    from protocol.java import spread, uuid_hash
    assert spread(uuid_hash(TOPIC_IDS["T2"])) & 15 < spread(uuid_hash(T1)) & 15
    members = {"A": member(["T1", "T2"], {"T1": [0, 1], "T2": [0, 1]}),
               "B": member(["T1", "T2"], {"T1": [2], "T2": [2]})}
    assert as_sets(assign_target("uniform", members, topics_of({"T1": 3, "T2": 3}))) == {
        "A": {"T1": {0}, "T2": {0, 1}}, "B": {"T1": {1, 2}, "T2": {2}}}


def test_uniform_missing_topic_message_is_kafkas():
    # Kafka prints Uuid.toString(): the canonical base64 of the id (the test id's last character has stray bits).
    with pytest.raises(PartitionAssignorError, match=r"^Members are subscribed to topic T2-B4s3VTwiI5YHbPp6YUQ "
                                                     r"which doesn't exist in the topic metadata\.$"):
        run("uniform", {"A": member(["T2"])}, topics_of({"T1": 3}), H)
    with pytest.raises(PartitionAssignorError, match="^Member is subscribed to a non-existent topic$"):
        run("range", {"A": member(["T2"])}, topics_of({"T1": 3}), X)


def test_validity_and_balance_for_large_sample_set():
    # testValidityAndBalanceForLargeSampleSet: 100 topics x 3 partitions, 49 members, homogeneous.
    rng = random.Random(100)
    topics = {uuid_string(rng.getrandbits(63), rng.getrandbits(63)): {"name": f"topic-{i}", "partitions": 3}
              for i in range(1, 101)}
    members = {f"member{i}": {"subscribed_topic_ids": list(topics)} for i in range(1, 50)}
    result = assign_target("uniform", members, topics)
    sizes = [sum(map(len, a.values())) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1
    seen = [(t, p) for a in result.values() for t, ps in a.items() for p in ps]
    assert sorted(seen) == sorted((t, p) for t in topics for p in range(3))


# --- CommonAssignorTests -------------------------------------------------------------------------------------------

COMMON_TOPICS = {uuid_string(11, 1): 2, uuid_string(22, 2): 5, uuid_string(33, 3): 7}


def _common_members(current: dict | None = None) -> dict:
    ids = list(COMMON_TOPICS)
    return {m: {"subscribed_topic_ids": ids, "current": (current or {}).get(m, {})} for m in "ABC"}


@pytest.mark.parametrize("name,stype", [("uniform", H), ("uniform", X), ("range", H), ("range", X)])
def test_assignment_reuse_and_reassignment_stickiness(name, stype):
    # testAssignmentReuse: feeding the result back changes nothing. testReassignmentStickiness: nor does the
    # order the members are iterated in (LinkedHashMap permutations in Kafka's test).
    topics = {t: {"name": t, "partitions": n} for t, n in COMMON_TOPICS.items()}
    first = run(name, _common_members(), topics, stype)
    again = run(name, _common_members(first), topics, stype)
    assert as_sets(again) == as_sets(first)
    for order in itertools.permutations("ABC"):
        assert as_sets(run(name, _common_members(first), topics, stype, member_order=list(order))) == as_sets(first)


# --- RangeAssignorTest: static membership --------------------------------------------------------------------------

def test_range_testStaticMembership():
    # testStaticMembership: two static members on a 3-partition topic; A rejoins as memberA1 with the same instance
    # id and gets A's partitions, B keeps its own (members ordered by instance id).
    topics = topics_of({"T1": 3})
    first = assign_target("range", {"A": member(["T1"], instance_id="instanceA"),
                                    "B": member(["T1"], instance_id="instanceB")}, topics)
    second = assign_target("range", {"B": member(["T1"], instance_id="instanceB"),
                                     "memberA1": member(["T1"], instance_id="instanceA")}, topics)
    assert second["memberA1"] == first["A"] and second["B"] == first["B"]
    assert as_sets(first) == {"A": {"T1": {0, 1}}, "B": {"T1": {2}}}


def test_range_static_membership():
    # testMixedStaticMembership: a static member rejoining with a new member id gets the same
    # partitions (members are ordered by instance id, then dynamic ones by member id).
    topics = topics_of({"T1": 5})
    first = assign_target("range", {"A": member(["T1"], instance_id="instanceA"),
                                    "C": member(["T1"], instance_id="instanceC"), "B": member(["T1"])}, topics)
    second = assign_target("range", {"C": member(["T1"], instance_id="instanceC"), "B": member(["T1"]),
                                     "memberA1": member(["T1"], instance_id="instanceA")}, topics)
    assert second["memberA1"] == first["A"] and second["B"] == first["B"] and second["C"] == first["C"]
    assert as_sets(first) == {"A": {"T1": {0, 1}}, "C": {"T1": {2, 3}}, "B": {"T1": {4}}}


# --- GroupSpecImplTest ----------------------------------------------------------------------------------------------

def test_group_spec():
    # testMemberIds / testIsPartitionAssigned / testMemberAssignment, on kgroup's rebuilt GroupSpec.
    topics = topics_of({"T1": 3, "T2": 3})
    spec = build_group_spec({"test-member": member(["T1"], {"T1": [1]})}, topics)
    assert [m.member_id for m in spec.members] == ["test-member"]
    marks = spec.assigned_marks(T1)
    assert marks[1] == 1 and marks[2] == 0
    assert spec.assigned_marks(TOPIC_IDS["T2"]) is None
    assert spec.members[0].assignment[T1].order() == [1]
    assert spec.subscription_type == "homogeneous"

"""ConsumerGroupHeartbeat on the whole coordinator: Kafka 4.4's ``GroupMetadataManagerTest`` (consumer group part),
ported case by case with Kafka's expected responses, records and states (each test names the Kafka test it ports).

The harness (``cg_env.CgEnv``) is Kafka's ``GroupMetadataManagerTestContext``: a mocked server assignor that answers
what the test prepared, the clock at 1000 ms, ``context.replay`` of builder records -- and, after every call, the
check that the shard's state equals the replay of its log. Differences from Kafka's harness: topic ids are kgroup's
stable ones and the metadata hash is kgroup's function (``coordinator.metadata_image``: same inputs, another
64-bit hash), so expected hashes are computed over the same topics with :meth:`CgEnv.metadata_hash`.
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import (ConsumerGroupMember, ConsumerGroupState, MemberState,
                                        current_assignment_record, member_metadata_record,
                                        target_assignment_record)

from cg_env import DEFAULT_CLIENT_ADDRESS, DEFAULT_CLIENT_ID, CgEnv, assert_records, assert_unordered_records, \
    assignment_of

E = ErrorCode
S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS
G = "fooup"


def M(member_id: str, **kw) -> ConsumerGroupMember:
    """``new ConsumerGroupMember.Builder(memberId)`` with the test context's client id and address."""
    kw.setdefault("client_id", DEFAULT_CLIENT_ID)
    kw.setdefault("client_host", DEFAULT_CLIENT_ADDRESS)
    if "subscribed_topic_names" in kw:
        kw["subscribed_topic_names"] = frozenset(kw["subscribed_topic_names"])
    return ConsumerGroupMember(member_id, **kw)


def ep(epoch: int, **topics) -> dict[str, dict[int, int]]:
    """``toAssignmentWithEpochs(mkAssignment(...), epoch)`` keyed by topic id."""
    return {CgEnv.tid(t): dict.fromkeys(ps, epoch) for t, ps in topics.items()}


def asg(**topics) -> dict[str, list[int]]:
    """``mkAssignment(mkTopicAssignment(...))`` keyed by topic id."""
    return {CgEnv.tid(t): list(ps) for t, ps in topics.items()}


FOO, BAR = CgEnv.tid("foo"), CgEnv.tid("bar")


def single_member_group(env: CgEnv, member: ConsumerGroupMember, epoch: int, target: dict, assignment_epoch: int,
                        timestamp: int = 12345) -> None:
    """The records Kafka's tests replay one by one for a one-member group."""
    env.replay(member_metadata_record(G, member),
               R.ConsumerGroupMetadata(G, epoch=epoch, metadata_hash=env.metadata_hash("foo")),
               target_assignment_record(G, member.member_id, target),
               R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=assignment_epoch,
                                                       assignment_timestamp_ms=timestamp),
               current_assignment_record(G, member))


# --- regexes, member ids, unknown groups and members, epochs ------------------------------------------------------

def test_consumer_heartbeat_regex_validation():
    """testConsumerHeartbeatRegexValidation."""
    env = CgEnv(topics={})
    env.assignor.prepare({})
    code, msg = env.heartbeat_error("foo", "m", 0, rebalance_timeout_ms=5000, regex="[", owned={})
    assert code == E.INVALID_REGULAR_EXPRESSION
    assert msg == "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ]."
    assert env.heartbeat("foo", "m", 0, rebalance_timeout_ms=5000, regex=".*", owned={}).member_epoch == 1
    code, msg = env.heartbeat_error("foo", "m", 1, rebalance_timeout_ms=5000, regex="[", owned={})
    assert code == E.INVALID_REGULAR_EXPRESSION
    assert env.heartbeat("foo", "m", 1, rebalance_timeout_ms=5000, names=["foo"], owned={}).member_epoch == 2


def test_member_id_generation():
    """testMemberIdGeneration: v0 with an empty member id -> the coordinator generates one (Uuid.toString)."""
    env = CgEnv(topics={})
    env.assignor.prepare({})
    r = env.heartbeat("group-foo", "", 0, assignor="range", rebalance_timeout_ms=5000, names=["foo", "bar"],
                      owned={}, version=0)
    assert r.error_code == 0 and r.member_id and len(r.member_id) == 22
    assert (r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == (2, 5000, {})


def test_unknown_group_id():
    """testUnknownGroupId."""
    env = CgEnv()
    code, msg = env.heartbeat_error(G, "m", 100, rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (code, msg) == (E.GROUP_ID_NOT_FOUND, f"Consumer group {G} not found.")


def test_unknown_member_id_joins_consumer_group():
    """testUnknownMemberIdJoinsConsumerGroup."""
    env = CgEnv()
    env.assignor.prepare({})
    env.heartbeat(G, "m1", 0, assignor="range", rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    code, msg = env.heartbeat_error(G, "m2", 1, rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (code, msg) == (E.UNKNOWN_MEMBER_ID, f"Member m2 is not a member of group {G}.")


def test_consumer_group_member_epoch_validation():
    """testConsumerGroupMemberEpochValidation."""
    env = CgEnv()
    m = M("m", state=S, member_epoch=100, previous_member_epoch=99, rebalance_timeout_ms=5000,
          subscribed_topic_names=["foo", "bar"], server_assignor_name="range", assigned_partitions=ep(100, foo=[1, 2, 3]))
    env.replay(member_metadata_record(G, m), R.ConsumerGroupMetadata(G, epoch=100, metadata_hash=0),
               target_assignment_record(G, "m", asg(foo=[1, 2, 3])),
               R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=100, assignment_timestamp_ms=12345),
               current_assignment_record(G, m))
    code, msg = env.heartbeat_error(G, "m", 200, rebalance_timeout_ms=5000, names=["foo", "bar"])
    assert code == E.FENCED_MEMBER_EPOCH
    assert msg == ("The consumer group member has a greater member epoch (200) than the one known by the group "
                   "coordinator (100). The member must abandon all its partitions and rejoin.")
    code, msg = env.heartbeat_error(G, "m", 50, rebalance_timeout_ms=5000, names=["foo", "bar"])
    assert code == E.FENCED_MEMBER_EPOCH and "smaller member epoch (50)" in msg
    # the previous epoch without owned partitions
    assert env.heartbeat_error(G, "m", 99, rebalance_timeout_ms=5000, names=["foo", "bar"])[0] == E.FENCED_MEMBER_EPOCH
    # the previous epoch with a subset of the assignment: the response with the bumped epoch was lost
    r = env.heartbeat(G, "m", 99, rebalance_timeout_ms=5000, names=["foo", "bar"], owned={FOO: [1, 2]})
    assert r.error_code == 0 and r.member_epoch == 100


def _member_of_foo(env: CgEnv, case: str) -> None:
    """The one-member group of Kafka's rejoin and duplicate-heartbeat cases (foo has 3 partitions): the member at
    epoch 100, STABLE with foo 0-2 (target at 100), UNREVOKED_PARTITIONS with 2 pending (target foo 0-1 at 101), or
    UNRELEASED_PARTITIONS with foo 0 (target foo 0-2 at 100)."""
    common = dict(member_epoch=100, previous_member_epoch=99, rebalance_timeout_ms=5000,
                  subscribed_topic_names=["foo"], server_assignor_name="range")
    if case == "stable":
        m = M("m", state=S, assigned_partitions=ep(100, foo=[0, 1, 2]), **common)
        single_member_group(env, m, 100, asg(foo=[0, 1, 2]), 100)
    elif case == "unrevoked":
        m = M("m", state=UNREV, assigned_partitions=ep(11, foo=[0, 1]),
              partitions_pending_revocation=ep(11, foo=[2]), **common)
        single_member_group(env, m, 101, asg(foo=[0, 1]), 101)
    else:
        m = M("m", state=UNREL, assigned_partitions=ep(11, foo=[0]), **common)
        single_member_group(env, m, 100, asg(foo=[0, 1, 2]), 100)


@pytest.mark.parametrize("case", ["stable", "unrevoked", "unreleased"])
def test_member_can_rejoin_with_epoch_zero(case):
    """testMemberCanRejoinWithEpochZeroInStableState / ...InUnrevokedPartitionsState /
    ...InUnreleasedPartitionsState: epoch 0 on a known member is a rejoin, not an error."""
    env = CgEnv(topics={"foo": 3})
    _member_of_foo(env, case)
    want = {"stable": (100, [0, 1, 2]), "unrevoked": (101, [0, 1]), "unreleased": (100, [0, 1, 2])}[case]
    r = env.heartbeat(G, "m", 0, rebalance_timeout_ms=5000, names=["foo"], owned={})
    assert (r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == (want[0], 5000, {FOO: want[1]})


@pytest.mark.parametrize("case", ["stable", "unrevoked", "revocation_ack"])
def test_duplicate_full_heartbeat(case):
    """testDuplicateFullHeartbeatInStableState / ...InUnrevokedPartitionsState /
    testDuplicateFullHeartbeatWithRevocationAck: a repeated
    full heartbeat gets the same answer and writes nothing."""
    env = CgEnv(topics={"foo": 3})
    _member_of_foo(env, "stable" if case == "stable" else "unrevoked")
    owned, want_epoch, want, state = {"stable": ([0, 1, 2], 100, [0, 1, 2], S),
                                      "unrevoked": ([0, 1, 2], 100, [0, 1], UNREV),
                                      "revocation_ack": ([0, 1], 101, [0, 1], S)}[case]
    kw = dict(rebalance_timeout_ms=5000, names=["foo"], assignor="range", owned={FOO: owned})
    r1 = env.heartbeat(G, "m", 100, **kw)
    assert (r1.member_epoch, assignment_of(r1)) == (want_epoch, {FOO: want})
    assert env.member(G, "m").state == state
    r2 = env.heartbeat(G, "m", 100, **kw)  # the same request (after the ack: the previous epoch, owned a subset)
    assert r2 == r1 and env.last_records == []
    assert env.member(G, "m").state == state


def test_duplicate_full_heartbeat_in_unreleased_partitions_state():
    """testDuplicateFullHeartbeatInUnreleasedPartitionsState."""
    env = CgEnv(topics={"foo": 3})
    m1 = M("m1", state=UNREL, member_epoch=100, previous_member_epoch=99, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range", assigned_partitions=ep(11, foo=[0]))
    m2 = M("m2", state=UNREV, member_epoch=99, previous_member_epoch=98, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range", assigned_partitions={},
           partitions_pending_revocation=ep(11, foo=[1, 2]))
    env.replay(member_metadata_record(G, m1), member_metadata_record(G, m2),
               R.ConsumerGroupMetadata(G, epoch=100, metadata_hash=env.metadata_hash("foo")),
               target_assignment_record(G, "m1", asg(foo=[0, 1, 2])), target_assignment_record(G, "m2", {}),
               R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=100, assignment_timestamp_ms=12345),
               current_assignment_record(G, m1), current_assignment_record(G, m2))
    kw = dict(rebalance_timeout_ms=5000, names=["foo"], assignor="range", owned={FOO: [0]})
    r1 = env.heartbeat(G, "m1", 100, **kw)
    assert (r1.member_epoch, assignment_of(r1)) == (100, {FOO: [0]})
    r2 = env.heartbeat(G, "m1", 100, **kw)
    assert r2 == r1 and env.last_records == []
    assert env.member(G, "m1").state == UNREL


# --- joining, subscriptions, leaving -----------------------------------------------------------------------------

def test_member_joins_empty_consumer_group():
    """testMemberJoinsEmptyConsumerGroup: member metadata, epoch 2, target, target metadata, current assignment."""
    env = CgEnv(racks=True)
    env.assignor.prepare({"m": asg(foo=range(6), bar=range(3))})
    assert env.group(G) is None
    r = env.heartbeat(G, "m", 0, assignor="range", rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m", 2, 5000)
    assert assignment_of(r) == {FOO: [0, 1, 2, 3, 4, 5], BAR: [0, 1, 2]}
    expected = M("m", state=S, member_epoch=2, previous_member_epoch=0, rebalance_timeout_ms=5000,
                 subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
                 assigned_partitions=ep(2, foo=range(6), bar=range(3)))
    assert_records([member_metadata_record(G, expected),
                    R.ConsumerGroupMetadata(G, epoch=2, metadata_hash=env.metadata_hash("foo", "bar")),
                    target_assignment_record(G, "m", asg(foo=range(6), bar=range(3))),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=2, assignment_timestamp_ms=1000),
                    current_assignment_record(G, expected)], env.last_records)


def test_updating_subscription_triggers_new_target_assignment():
    """testUpdatingSubscriptionTriggersNewTargetAssignment."""
    env = CgEnv(racks=True)
    m = M("m", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"],
          server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group(G, 10, members=[m], assignments={"m": asg(foo=range(6))}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    env.assignor.prepare({"m": asg(foo=range(6), bar=range(3))})
    r = env.heartbeat(G, "m", 10, names=["foo", "bar"])
    assert (r.member_epoch, assignment_of(r)) == (11, {FOO: list(range(6)), BAR: [0, 1, 2]})
    expected = M("m", state=S, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=["foo", "bar"],
                 server_assignor_name="range",
                 assigned_partitions={FOO: dict.fromkeys(range(6), 10), BAR: dict.fromkeys(range(3), 11)})
    assert_records([member_metadata_record(G, expected),
                    R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar")),
                    target_assignment_record(G, "m", asg(foo=range(6), bar=range(3))),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=1000),
                    current_assignment_record(G, expected)], env.last_records)


def _two_members(env: CgEnv, with_zar: bool = False, rebalance_timeout: int = 5000) -> None:
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=rebalance_timeout,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=rebalance_timeout,
           subscribed_topic_names=["foo", "bar", "zar"] if with_zar else ["foo", "bar"],
           server_assignor_name="range", assigned_partitions=ep(10, foo=[3, 4, 5], bar=[2]))
    topics = ("foo", "bar", "zar") if with_zar else ("foo", "bar")
    env.build_group(G, 10, members=[m1, m2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash(*topics))


def test_new_joining_member_triggers_new_target_assignment():
    """testNewJoiningMemberTriggersNewTargetAssignment."""
    env = CgEnv(racks=True)
    _two_members(env)
    env.assignor.prepare({"m1": asg(foo=[0, 1], bar=[0]), "m2": asg(foo=[2, 3], bar=[1]),
                          "m3": asg(foo=[4, 5], bar=[2])})
    r = env.heartbeat(G, "m3", 0, rebalance_timeout_ms=5000, names=["foo", "bar"], assignor="range", owned={})
    assert (r.member_id, r.member_epoch, assignment_of(r)) == ("m3", 11, {})
    m3 = M("m3", state=UNREL, member_epoch=11, previous_member_epoch=0, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range")
    assert_third_member_joined(env, m3)


def assert_third_member_joined(env: CgEnv, m3) -> None:
    """The records of m3 joining ``_two_members``' group (epoch 11): its metadata, the epoch, the new target of all
    three, the target metadata, m3's current assignment (UNRELEASED_PARTITIONS, nothing yet)."""
    assert_unordered_records([
        [member_metadata_record(G, m3)],
        [R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))],
        [target_assignment_record(G, "m1", asg(foo=[0, 1], bar=[0])),
         target_assignment_record(G, "m2", asg(foo=[2, 3], bar=[1])),
         target_assignment_record(G, "m3", asg(foo=[4, 5], bar=[2]))],
        [R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=1000)],
        [current_assignment_record(G, m3)]], env.last_records)


def test_leaving_member_bumps_group_epoch():
    """testLeavingMemberBumpsGroupEpoch: the hash is recomputed without the leaver's topics (zar)."""
    env = CgEnv(topics={"foo": 6, "bar": 3, "zar": 1}, racks=True)
    _two_members(env, with_zar=True)
    r = env.heartbeat(G, "m2", -1, rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == ("m2", -1, 0, None)
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m2"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m2"),
                    R.ConsumerGroupMemberMetadataTombstone(G, member_id="m2"),
                    R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))],
                   env.last_records)


def test_new_racks_data_in_metadata_image_triggers_epoch_bump():
    """testNewRacksDataInMetadataImageTriggersEpochBump: the topic hash covers each partition's racks, so racks
    appearing in the metadata image change the group's metadata hash; the next heartbeat bumps the group epoch,
    computes a new target assignment (same partitions) and moves the member to the new epoch, partitions keeping
    the epoch they were assigned at."""
    env = CgEnv(topics={"foo": 6})
    m = M("m", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"],
          server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group(G, 10, members=[m], assignments={"m": asg(foo=range(6))}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    env.assignor.prepare({"m": asg(foo=range(6))})
    old_hash = env.metadata_hash("foo")
    for b in env.svc.cluster.brokers.values():  # racks arrive in the image
        b.rack = f"rack{b.broker_id}"
    env.pin_image()
    new_hash = env.metadata_hash("foo")
    assert new_hash != old_hash
    r = env.heartbeat(G, "m", 10)
    assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (0, 11, 5000, None)
    expected = M("m", state=S, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=["foo"],
                 server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    assert_records([R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=new_hash),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=env.now),
                    current_assignment_record(G, expected)], env.last_records)


def test_subscription_metadata_refreshed_after_group_is_loaded():
    """testSubscriptionMetadataRefreshedAfterGroupIsLoaded: the group's stored metadata hash was computed when foo
    had 3 partitions; the image has 6. The next heartbeat (not a full one) sees the hash differ: epoch 11, a new
    target, the member gets foo 3-5 at epoch 11 (0-2 keep 10); the group is loaded by a real failover first."""
    import dataclasses

    from coordinator.metadata_image import compute_group_hash, compute_topic_hash
    env = CgEnv(topics={"foo": 6}, racks=True, brokers=2)
    foo6 = env.manager.image.topics["foo"]
    foo3 = dataclasses.replace(foo6, num_partitions=3, partition_racks=foo6.partition_racks[:3])
    m = M("m", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
          subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
          assigned_partitions=ep(10, foo=[0, 1, 2]))
    env.build_group(G, 10, members=[m], assignments={"m": asg(foo=[0, 1, 2])}, assignment_epoch=10,
                    metadata_hash=compute_group_hash({"foo": compute_topic_hash(foo3)}))
    env.failover()
    env.assignor.prepare({"m": asg(foo=range(6))})
    r = env.heartbeat(G, "m", 10)
    assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == \
        (0, 11, 5000, {FOO: [0, 1, 2, 3, 4, 5]})
    expected = M("m", state=S, member_epoch=11, previous_member_epoch=10, rebalance_timeout_ms=5000,
                 subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
                 assigned_partitions={FOO: {0: 10, 1: 10, 2: 10, 3: 11, 4: 11, 5: 11}})
    assert_records([R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo")),
                    target_assignment_record(G, "m", asg(foo=range(6))),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=env.now),
                    current_assignment_record(G, expected)], env.last_records)

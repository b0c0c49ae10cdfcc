"""Static membership in KIP-848 consumer groups: Kafka 4.4's ``GroupMetadataManagerTest`` static-member cases,
ported with Kafka's expected responses and records (each test names the Kafka test it ports). Harness: cg_env."""

from __future__ import annotations

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import MemberState, current_assignment_record, member_metadata_record, \
    target_assignment_record

from cg_env import CgEnv, assert_records, assignment_of
from test_cg_heartbeat_kafka import BAR, FOO, G, M, asg, assert_third_member_joined, ep

E = ErrorCode
S, UNREL = MemberState.STABLE, MemberState.UNRELEASED_PARTITIONS


def two_static_members(env: CgEnv, m2_topics=("foo", "bar"), hash_topics=("foo", "bar"), rebalance_timeout=-1):
    m1 = M("m1", state=S, instance_id="m1", member_epoch=10, previous_member_epoch=9,
           rebalance_timeout_ms=rebalance_timeout, subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
    m2 = M("m2", state=S, instance_id="m2", member_epoch=10, previous_member_epoch=9,
           rebalance_timeout_ms=rebalance_timeout, subscribed_topic_names=list(m2_topics),
           server_assignor_name="range", assigned_partitions=ep(10, foo=[3, 4, 5], bar=[2]))
    env.build_group(G, 10, members=[m1, m2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash(*hash_topics))
    return m1, m2


def test_group_epoch_bump_when_new_static_member_joins():
    """testGroupEpochBumpWhenNewStaticMemberJoins."""
    env = CgEnv(racks=True)
    two_static_members(env, m2_topics=("foo", "bar", "zar"))
    env.assignor.prepare({"m1": asg(foo=[0, 1], bar=[0]), "m2": asg(foo=[2, 3], bar=[1]),
                          "m3": asg(foo=[4, 5], bar=[2])})
    r = env.heartbeat(G, "m3", 0, instance_id="m3", rebalance_timeout_ms=5000, assignor="range",
                      names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch, assignment_of(r)) == ("m3", 11, {})
    m3 = M("m3", member_epoch=11, state=UNREL, instance_id="m3", previous_member_epoch=0, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range")
    assert_third_member_joined(env, m3)


def test_static_member_gets_back_assignment_upon_rejoin():
    """testStaticMemberGetsBackAssignmentUponRejoin: a temporary leave (-2) keeps the member and its partitions
    (assignment epochs reset to 0); the rejoin under a new member id replaces it without a group epoch bump."""
    env = CgEnv(racks=True)
    _, m2 = two_static_members(env, rebalance_timeout=5000)
    r = env.heartbeat(G, "m2", -2, instance_id="m2", names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == ("m2", -2, 0, None)
    away = m2.replace(member_epoch=-2, partitions_pending_revocation={}).reset_assigned_partitions_epochs_to_zero()
    assert_records([current_assignment_record(G, away)], env.last_records)

    r = env.heartbeat(G, "m2-rejoin", 0, instance_id="m2", rebalance_timeout_ms=5000, assignor="range",
                      names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch, assignment_of(r)) == ("m2-rejoin", 10, {FOO: [3, 4, 5], BAR: [2]})
    common = dict(state=S, instance_id="m2", rebalance_timeout_ms=5000, subscribed_topic_names=["foo", "bar"],
                  server_assignor_name="range", assigned_partitions=ep(0, foo=[3, 4, 5], bar=[2]))
    copied = M("m2-rejoin", member_epoch=0, previous_member_epoch=0, **common)
    rejoined = M("m2-rejoin", member_epoch=10, previous_member_epoch=0, **common)
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m2"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m2"),
                    R.ConsumerGroupMemberMetadataTombstone(G, member_id="m2"),
                    member_metadata_record(G, copied),
                    target_assignment_record(G, "m2-rejoin", asg(foo=[3, 4, 5], bar=[2])),
                    current_assignment_record(G, copied),
                    current_assignment_record(G, rejoined)], env.last_records)
    # no timers for the old member id (it never heartbeat here)
    assert not any(k.endswith("-m2") for k in env.timers())


def test_no_group_epoch_bump_when_static_member_temporarily_leaves():
    """testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves."""
    env = CgEnv(racks=True)
    _, m2 = two_static_members(env)
    r = env.heartbeat(G, "m2", -2, instance_id="m2", rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch) == ("m2", -2)
    away = m2.replace(member_epoch=-2, partitions_pending_revocation={}).reset_assigned_partitions_epochs_to_zero()
    assert_records([current_assignment_record(G, away)], env.last_records)
    assert env.group(G).group_epoch == 10


def test_leaving_static_member_bumps_group_epoch():
    """testLeavingStaticMemberBumpsGroupEpoch."""
    env = CgEnv(topics={"foo": 6, "bar": 3, "zar": 1}, racks=True)
    two_static_members(env, m2_topics=("foo", "bar", "zar"), hash_topics=("foo", "bar", "zar"))
    r = env.heartbeat(G, "m2", -1, instance_id="m2", rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch) == ("m2", -1)
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m2"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m2"),
                    R.ConsumerGroupMemberMetadataTombstone(G, member_id="m2"),
                    R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))],
                   env.last_records)


def test_static_member_rejoins_with_same_member_id_and_different_instance_id():
    """testStaticMemberRejoinsWithSameMemberIdAndDifferentInstanceId (KAFKA-20747: the stale instance id goes)."""
    env = CgEnv(topics={"foo": 6})
    m1 = M("m1", state=S, instance_id="instance-1", member_epoch=10, previous_member_epoch=9,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range", assigned_partitions=ep(10, foo=range(6)))
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=range(6))}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    assert env.group(G).static_members == {"instance-1": "m1"}
    env.heartbeat(G, "m1", 0, instance_id="instance-2", rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert env.group(G).static_members == {"instance-2": "m1"}


def _one_static(env: CgEnv) -> None:
    m1 = M("m1", state=S, instance_id="m1", member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range", assigned_partitions=ep(10, foo=[0, 1, 2]))
    env.build_group(G, 10, members=[m1], assignments={"m1": asg(foo=[0, 1, 2])}, assignment_epoch=10)


def test_unreleased_instance_id_when_new_member_joins_with_in_use_instance_id():
    """testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId."""
    env = CgEnv()
    _one_static(env)
    code, msg = env.heartbeat_error(G, "m2", 0, instance_id="m1", rebalance_timeout_ms=5000, names=["foo"],
                                    owned={})
    assert code == E.UNRELEASED_INSTANCE_ID
    assert msg == ("Static member m2 with instance id m1 cannot join the group because the instance id is owned "
                   "by m1 member.")


def test_unknown_member_id_when_unknown_static_member_joins():
    """testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins."""
    env = CgEnv()
    _one_static(env)
    code, msg = env.heartbeat_error(G, "m2", 10, instance_id="m2", rebalance_timeout_ms=5000, names=["foo"],
                                    owned={})
    assert (code, msg) == (E.UNKNOWN_MEMBER_ID, "Instance id m2 is unknown.")


def test_fenced_instance_id_when_static_member_with_different_member_id_joins():
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins."""
    env = CgEnv()
    _one_static(env)
    code, msg = env.heartbeat_error(G, "unknown-m1", 11, instance_id="m1", rebalance_timeout_ms=5000,
                                    names=["foo"], owned={})
    assert (code, msg) == (E.FENCED_INSTANCE_ID, "Static member unknown-m1 with instance id m1 was fenced by member m1.")


def test_consumer_group_member_epoch_validation_for_static_member():
    """testConsumerGroupMemberEpochValidationForStaticMember."""
    env = CgEnv()
    m = M("m", state=S, instance_id="m", member_epoch=100, previous_member_epoch=99, rebalance_timeout_ms=5000,
          subscribed_topic_names=["foo", "bar"], server_assignor_name="range", assigned_partitions=ep(100, foo=[1, 2, 3]))
    env.replay(member_metadata_record(G, m), R.ConsumerGroupMetadata(G, epoch=100, metadata_hash=0),
               target_assignment_record(G, "m", asg(foo=[1, 2, 3])),
               R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=100, assignment_timestamp_ms=12345),
               current_assignment_record(G, m))
    kw = dict(instance_id="m", rebalance_timeout_ms=5000, names=["foo", "bar"])
    for epoch in (200, 50, 99):
        assert env.heartbeat_error(G, "m", epoch, **kw)[0] == E.FENCED_MEMBER_EPOCH
    assert env.heartbeat(G, "m", 99, owned={FOO: [1, 2]}, **kw).member_epoch == 100


def test_unknown_member_id_when_unknown_static_member_leaves():
    """testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves."""
    env = CgEnv()
    _one_static(env)
    code, msg = env.heartbeat_error(G, "m1", -2, instance_id="unknown-m1", rebalance_timeout_ms=5000,
                                    names=["foo"], owned={})
    assert (code, msg) == (E.UNKNOWN_MEMBER_ID, "Instance id unknown-m1 is unknown.")


def test_fenced_instance_id_when_static_member_with_different_member_id_leaves():
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves."""
    env = CgEnv()
    _one_static(env)
    code, msg = env.heartbeat_error(G, "unknown-m1", -2, instance_id="m1", rebalance_timeout_ms=5000,
                                    names=["foo"], owned={})
    assert (code, msg) == (E.FENCED_INSTANCE_ID, "Static member unknown-m1 with instance id m1 was fenced by member m1.")

"""Mixed groups and online migration (group.consumer.migration.policy): Kafka 4.4's ``GroupMetadataManagerTest``
cases ported with Kafka's expected records and answers (each names its Kafka test). kgroup's transient records
(``RebalanceStarted`` ...) are left out of the comparisons: Kafka keeps that state in memory only."""

from __future__ import annotations

import pytest

from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription,
                                        encode_assignment, encode_subscription)
from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import ConsumerGroupState, MemberState, current_assignment_record, \
    member_metadata_record, target_assignment_record

from cg_env import (CgEnv, assert_records, assert_unordered_records, assignment_of, classic_heartbeat, classic_join,
                    classic_leave, classic_sync)
from test_cg_heartbeat_kafka import M, asg, ep

E = ErrorCode
S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS
GID = "group-id"
FOO_ID, BAR_ID = CgEnv.tid("foo"), CgEnv.tid("bar")


def sub(topics, owned=(), version=3) -> bytes:
    return encode_subscription(ConsumerProtocolSubscription(topics=list(topics), owned_partitions=list(owned)),
                               version)


def durable(records):
    return [r for r in records if r.DURABLE]


def classic_member_metadata(session: int, protocols):
    return R.ClassicMemberMetadata(session, tuple(protocols))


def test_consumer_group_heartbeat_with_stable_classic_group():
    """testConsumerGroupHeartbeatWithStableClassicGroup: online upgrade (policy upgrade)."""
    env = CgEnv(topics={"foo": 1, "bar": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    env.assignor.prepare({"member-id-1": asg(foo=[0]), "member-id-2": asg(bar=[0])})
    protocols = (("range", sub(["foo", "bar"], [("foo", [0]), ("bar", [0])])),)
    assignment = encode_assignment(ConsumerProtocolAssignment([("foo", [0]), ("bar", [0])]))
    env.replay(R.GroupMetadata(GID, protocol_type="consumer", generation_id=0, protocol_name="range",
                               leader="member-id-1", current_state_timestamp_ms=1000, members=(
                                   R.MemberMetadata("member-id-1", None, "client-id", "client-host", 10000, 5000,
                                                    protocols[0][1], assignment),)))
    r = env.heartbeat(GID, "member-id-2", 0, rebalance_timeout_ms=5000, assignor="range", names=["foo", "bar"],
                      owned={})
    assert (r.error_code, r.member_epoch) == (0, 1)
    m1 = M("member-id-1", member_epoch=0, previous_member_epoch=0, client_id="client-id", client_host="client-host",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=10000,
           classic_member_metadata=classic_member_metadata(5000, protocols),
           assigned_partitions=ep(0, foo=[0], bar=[0]))
    m2 = M("member-id-2", member_epoch=1, previous_member_epoch=0, state=UNREL, server_assignor_name="range",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=5000)
    h = env.metadata_hash("foo", "bar")
    assert_unordered_records([
        [R.GroupTombstone(GID, reason="upgraded the classic group to a consumer group")],
        [member_metadata_record(GID, m1)], [R.ConsumerGroupMetadata(GID, epoch=0, metadata_hash=h)],
        [target_assignment_record(GID, "member-id-1", asg(foo=[0], bar=[0]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=0, assignment_timestamp_ms=0)],
        [current_assignment_record(GID, m1)],
        [member_metadata_record(GID, m2)], [R.ConsumerGroupMetadata(GID, epoch=1, metadata_hash=h)],
        [target_assignment_record(GID, "member-id-2", asg(bar=[0])),
         target_assignment_record(GID, "member-id-1", asg(foo=[0]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=1, assignment_timestamp_ms=1000)],
        [current_assignment_record(GID, m2)]], env.last_records)
    assert env.timers() == {f"session-timeout-{GID}-member-id-1": 1000 + 5000,
                            f"session-timeout-{GID}-member-id-2": 1000 + 45000}
    assert env.svc.group(GID) is None and env.group(GID) is not None


def test_consumer_group_heartbeat_with_non_consumer_classic_group():
    """testConsumerGroupHeartbeatWithNonEmptyClassicGroup: a classic group that is not Empty and does not use the
    consumer embedded protocol is not upgraded: GROUP_ID_NOT_FOUND with validateOnlineUpgrade's message."""
    env = CgEnv()
    classic_join(env, "classic-group-id", "", [("p", b"x")], protocol_type="connect", version=3)
    code, msg = env.heartbeat_error("classic-group-id", "m", 0, assignor="range", rebalance_timeout_ms=5000,
                                    names=["foo", "bar"], owned={})
    assert (code, msg) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group classic-group-id to consumer group "
                                                 "because the group does not use the consumer embedded protocol.")


def test_consumer_group_heartbeat_with_empty_classic_group():
    """testConsumerGroupHeartbeatWithEmptyClassicGroup: the empty classic group is tombstoned and replaced."""
    env = CgEnv(topics={})
    env.replay(R.GroupMetadata("classic-group-id", protocol_type=None, generation_id=0,
                               current_state_timestamp_ms=1000))
    env.assignor.prepare({})
    r = env.heartbeat("classic-group-id", "m", 0, assignor="range", rebalance_timeout_ms=5000,
                      names=["foo", "bar"], owned={})
    assert r.error_code == 0
    m = M("m", state=S, member_epoch=2, previous_member_epoch=0, rebalance_timeout_ms=5000,
          subscribed_topic_names=["foo", "bar"], server_assignor_name="range")
    assert env.last_records == [
        R.GroupTombstone("classic-group-id", reason="converted the empty classic group to a consumer group"),
        member_metadata_record("classic-group-id", m),
        R.ConsumerGroupMetadata("classic-group-id", epoch=2, metadata_hash=0),
        target_assignment_record("classic-group-id", "m", {}),
        R.ConsumerGroupTargetAssignmentMetadata("classic-group-id", assignment_epoch=2, assignment_timestamp_ms=1000),
        current_assignment_record("classic-group-id", m)]
    assert env.group("classic-group-id") is not None and env.svc.group("classic-group-id") is None


def test_classic_group_join_with_empty_consumer_group():
    """testClassicGroupJoinWithEmptyConsumerGroup: the empty consumer group is tombstoned; MEMBER_ID_REQUIRED."""
    env = CgEnv()
    env.build_group("consumer-group-id", 10)
    r = classic_join(env, "consumer-group-id", "", [("range", sub(["foo"]))])
    assert r.error_code == E.MEMBER_ID_REQUIRED
    assert env.last_records[:3] == [R.ConsumerGroupTargetAssignmentMetadataTombstone("consumer-group-id"),
                                    R.ConsumerGroupPartitionMetadataTombstone("consumer-group-id"),
                                    R.ConsumerGroupMetadataTombstone("consumer-group-id")]
    assert env.group("consumer-group-id") is None and env.svc.group("consumer-group-id") is not None


def _downgrade_group(env: CgEnv, m2_topics=("foo", "bar"), m2_rebalance_timeout=45000):
    """Kafka's downgrade cases' group: m1 (classic protocol) and m2 (consumer protocol), epoch 10."""
    protocols = (("range", sub(["foo", "bar"], [("foo", [0, 1, 2]), ("bar", [0, 1])])),)
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
           server_assignor_name="range", rebalance_timeout_ms=45000,
           classic_member_metadata=classic_member_metadata(5000, protocols),
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=list(m2_topics),
           server_assignor_name="range", rebalance_timeout_ms=m2_rebalance_timeout,
           assigned_partitions=ep(10, foo=[3, 4, 5], bar=[2]))
    env.build_group(GID, 10, members=[m1, m2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash(*m2_topics))
    return protocols


def _assert_downgraded(env: CgEnv, protocols, generation: int, at_ms: int | None = None) -> None:
    """The consumer group's tombstones, then a Stable classic group of the classic member (generation = the group
    epoch, leader m1, its target assignment), which rebalances at once: a heartbeat timer and a join timer.
    ``at_ms``: when the conversion ran (kgroup runs a timer at its deadline; Kafka's MockTimer at the time the test
    slept to, 1 ms later)."""
    assignment = encode_assignment(ConsumerProtocolAssignment([("foo", [0, 1, 2]), ("bar", [0, 1])]))
    got = durable(env.last_records)
    expected_classic = R.GroupMetadata(GID, protocol_type="consumer", generation_id=generation, protocol_name="range",
                                       leader="m1", current_state_timestamp_ms=env.now if at_ms is None else at_ms, members=(
                                           R.MemberMetadata("m1", None, "client", "/127.0.0.1", 45000, 5000,
                                                            protocols[0][1], b""),))
    assert_unordered_records([
        [R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="m1"),
         R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="m2")],
        [R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="m1"),
         R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="m2")],
        [R.ConsumerGroupTargetAssignmentMetadataTombstone(GID)],
        [R.ConsumerGroupMemberMetadataTombstone(GID, member_id="m1"),
         R.ConsumerGroupMemberMetadataTombstone(GID, member_id="m2")],
        [R.ConsumerGroupPartitionMetadataTombstone(GID)], [R.ConsumerGroupMetadataTombstone(GID)]], got[:-1])
    classic_rec = got[-1]
    # the assignment bytes: Kafka serializes the target as a map (its order); compare the decoded partitions
    from protocol.consumer_protocol import decode_assignment
    assert classic_rec.members[0].assignment and \
        sorted(decode_assignment(classic_rec.members[0].assignment)[1].assigned_partitions) == \
        sorted(decode_assignment(assignment)[1].assigned_partitions)
    assert classic_rec == R.GroupMetadata(**{**expected_classic.__dict__, "members": (
        R.MemberMetadata(**{**expected_classic.members[0].__dict__, "assignment": classic_rec.members[0].assignment}),)})
    timers = env.timers()
    assert f"heartbeat-{GID}-m1" in timers and f"join-{GID}" in timers
    assert str(env.svc.group(GID).state) == "PreparingRebalance" and env.group(GID) is None


def test_last_consumer_protocol_member_leaving_consumer_group():
    """testLastConsumerProtocolMemberLeavingConsumerGroup: online downgrade (policy downgrade) when the last
    consumer-protocol member leaves."""
    env = CgEnv(racks=True, **{"group.consumer.migration.policy": "downgrade"})
    protocols = _downgrade_group(env)
    r = env.heartbeat(GID, "m2", -1, rebalance_timeout_ms=5000, names=["foo", "bar"], owned={})
    assert (r.member_id, r.member_epoch) == ("m2", -1)
    _assert_downgraded(env, protocols, 10)


def test_last_consumer_protocol_member_session_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: the last consumer-protocol member's session
    expires: ``session-timeout-<group>-<member>`` fences it and downgrades the group."""
    env = CgEnv(racks=True, **{"group.consumer.migration.policy": "downgrade"})
    protocols = _downgrade_group(env)
    env.heartbeat(GID, "m2", 10, names=["foo", "bar"], owned={})
    assert env.timers()[f"session-timeout-{GID}-m2"] == env.now + 45000
    deadline = env.now + 45000
    env.advance(45000 + 1)
    _assert_downgraded(env, protocols, 10, deadline)


def test_last_consumer_protocol_member_rebalance_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberRebalanceTimeoutInConsumerGroup: the last consumer-protocol member does not
    revoke in time: ``rebalance-timeout-<group>-<member>`` fences it and downgrades the group (generation 11, the
    epoch its subscription change bumped)."""
    env = CgEnv(topics={"foo": 6, "bar": 3, "zar": 1}, racks=True,
                **{"group.consumer.migration.policy": "downgrade"})
    protocols = _downgrade_group(env, m2_topics=("foo", "bar", "zar"), m2_rebalance_timeout=30000)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5])})
    r = env.heartbeat(GID, "m2", 10, names=["foo", "bar"], owned={FOO_ID: [3, 4, 5], BAR_ID: [2]})
    assert env.member(GID, "m2").state == UNREV and r.member_epoch == 10
    assert env.timers()[f"rebalance-timeout-{GID}-m2"] == env.now + 30000
    deadline = env.now + 30000
    env.advance(30000 + 1)
    _assert_downgraded(env, protocols, 11, deadline)


@pytest.mark.parametrize("is_static", [False, True])
def test_classic_member_join_to_consumer_group_with_disabled_migration_policy(is_static):
    """testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy: INCONSISTENT_GROUP_PROTOCOL for a new
    classic member, a rejoining one, and one replacing a consumer-protocol static member."""
    env = CgEnv(**{"group.consumer.migration.policy": "disabled"})
    protocols = (("range", sub(["foo", "bar", "baz"])),)
    members = [M("classic", state=S, member_epoch=10, previous_member_epoch=10,
                 instance_id="classic-instance-id" if is_static else None,
                 classic_member_metadata=classic_member_metadata(5000, protocols))]
    if is_static:
        members.append(M("consumer", state=S, member_epoch=10, previous_member_epoch=10,
                         instance_id="consumer-instance-id"))
    env.build_group(GID, 10, members=members)
    new = classic_join(env, GID, "", list(protocols), instance_id="new-instance-id" if is_static else None)
    assert new.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    rejoin = classic_join(env, GID, "" if is_static else "classic", list(protocols),
                          instance_id="classic-instance-id" if is_static else None)
    assert rejoin.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    if is_static:
        replace = classic_join(env, GID, "", list(protocols), instance_id="consumer-instance-id")
        assert replace.error_code == E.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_joining_consumer_group_with_new_dynamic_member(version):
    """testJoiningConsumerGroupWithNewDynamicMember (every ConsumerProtocolSubscription version; the SyncGroup part is
    testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions' rule): MEMBER_ID_REQUIRED,
    then the rejoin is a consumer group member with classic metadata; the JoinGroup answer carries its epoch as
    generation; session and sync timers."""
    env = CgEnv(topics={"foo": 2, "bar": 1}, racks=True)
    m = M("m", state=S, member_epoch=10, previous_member_epoch=10, assigned_partitions=ep(10, foo=[0, 1]))
    env.build_group(GID, 10, members=[m], assignments={"m": asg(foo=[0, 1])}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    protocols = [("range", sub(["foo", "bar"], version=version))]
    first = classic_join(env, GID, "", protocols, session_timeout_ms=5000, rebalance_timeout_ms=500)
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id and env.last_records == []
    new_id = first.member_id
    env.assignor.prepare({"m": asg(foo=[0]), new_id: asg(bar=[0])})
    second = classic_join(env, GID, new_id, protocols, session_timeout_ms=5000, rebalance_timeout_ms=500)
    assert (second.error_code, second.member_id, second.generation_id, second.protocol_type,
            second.protocol_name, second.leader, second.members) == (0, new_id, 11, "consumer", "range", "", [])
    expected = M(new_id, member_epoch=11, previous_member_epoch=0, state=S, subscribed_topic_names=["foo", "bar"],
                 rebalance_timeout_ms=500, assigned_partitions=ep(11, bar=[0]),
                 classic_member_metadata=classic_member_metadata(5000, [(n, b) for n, b in protocols]))
    assert_unordered_records([
        [member_metadata_record(GID, expected)],
        [R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))],
        [target_assignment_record(GID, "m", asg(foo=[0])), target_assignment_record(GID, new_id, asg(bar=[0]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=11, assignment_timestamp_ms=1000)],
        [current_assignment_record(GID, expected)]], env.last_records)
    timers = env.timers()
    assert timers[f"session-timeout-{GID}-{new_id}"] == 1000 + 5000
    assert timers[f"sync-{GID}-{new_id}"] == 1000 + 500
    # SyncGroup: the member's assignment, serialized in its subscription's version; the sync timer goes.
    s = classic_sync(env, GID, new_id, 11)
    from protocol.consumer_protocol import decode_assignment
    assert s.error_code == 0 and decode_assignment(s.assignment) == (version, ConsumerProtocolAssignment([("bar", [0])]))
    assert f"sync-{GID}-{new_id}" not in env.timers()


def test_classic_group_heartbeat_to_consumer_group_rebalance_in_progress():
    """testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress: behind the target epoch, partitions to revoke,
    or unreleased partitions now free -> REBALANCE_IN_PROGRESS, session timer re-armed, join timer armed."""
    env = CgEnv(topics={"foo": 1, "bar": 3})
    protocols = (("range", sub(["foo"])),)
    meta = classic_member_metadata(5000, protocols)
    m1 = M("m1", rebalance_timeout_ms=10000, classic_member_metadata=meta, member_epoch=9)
    m2 = M("m2", state=UNREV, rebalance_timeout_ms=10000, partitions_pending_revocation=ep(10, foo=[0]),
           classic_member_metadata=meta, member_epoch=10)
    m3 = M("m3", state=UNREL, rebalance_timeout_ms=10000, assigned_partitions=ep(10, bar=[0]),
           classic_member_metadata=meta, member_epoch=10)
    env.build_group(GID, 10, members=[m1, m2, m3], assignments={"m3": asg(bar=[0, 1, 2])}, assignment_epoch=10)
    for mid in ("m1", "m2", "m3"):
        r = classic_heartbeat(env, GID, mid, 9 if mid == "m1" else 10)
        assert r.error_code == E.REBALANCE_IN_PROGRESS and env.last_records == []
        assert env.timers()[f"session-timeout-{GID}-{mid}"] == env.now + 5000
        assert env.timers()[f"join-{GID}-{mid}"] == env.now + 10000


def test_classic_group_sync_to_consumer_group_rebalance_in_progress():
    """testClassicGroupSyncToConsumerGroupRebalanceInProgress: REBALANCE_IN_PROGRESS and a join timer."""
    env = CgEnv(**{"group.consumer.migration.policy": "downgrade"})
    meta = classic_member_metadata(5000, (("range", sub(["foo"])),))
    env.build_group(GID, 11, members=[M("m", rebalance_timeout_ms=10000, classic_member_metadata=meta,
                                        member_epoch=10)], assignment_epoch=11)
    assert classic_sync(env, GID, "m", 10).error_code == E.REBALANCE_IN_PROGRESS
    assert env.timers() == {f"join-{GID}-m": env.now + 10000}


def test_classic_member_leaves_consumer_group():
    """testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroup (its single-member core): a classic LeaveGroup
    fences the member like a consumer-protocol leave; unknown members are answered per member."""
    env = CgEnv()
    meta = classic_member_metadata(5000, (("range", sub(["foo"])),))
    env.build_group(GID, 10, members=[M("classic", state=S, member_epoch=10, classic_member_metadata=meta),
                                      M("consumer", state=S, member_epoch=10)], assignment_epoch=10)
    r = classic_leave(env, GID, [("classic", None), ("unknown", None)])
    assert [(m.member_id, m.error_code) for m in r.members] == [("classic", 0), ("unknown", E.UNKNOWN_MEMBER_ID)]
    assert R.ConsumerGroupMemberMetadataTombstone(GID, member_id="classic") in env.last_records
    assert list(env.group(GID).members) == ["consumer"] and env.group(GID).group_epoch == 11
    assert env.group(GID).state == ConsumerGroupState.ASSIGNING  # epoch 11 > assignment epoch 10



# --- classic requests answered by a consumer group: the error paths ----------------------------------------------

def _classic_member_group(env: CgEnv, **member) -> None:
    env.build_group(GID, 10, members=[M("member-id", **member)])


def test_classic_group_heartbeat_to_consumer_with_unknown_member():
    """testClassicGroupHeartbeatToConsumerWithUnknownMember: unknown member id, with or without an unknown instance
    id: UNKNOWN_MEMBER_ID."""
    env = CgEnv()
    env.build_group(GID, 10)
    assert classic_heartbeat(env, GID, "unknown-member-id", 10).error_code == E.UNKNOWN_MEMBER_ID
    r = classic_heartbeat(env, GID, "unknown-member-id", 10, instance_id="unknown-instance-id")
    assert r.error_code == E.UNKNOWN_MEMBER_ID


def test_classic_group_heartbeat_to_consumer_with_fenced_instance_id():
    """testClassicGroupHeartbeatToConsumerWithFencedInstanceId: the instance id belongs to another member id."""
    env = CgEnv()
    _classic_member_group(env, instance_id="instance-id", member_epoch=10,
                          classic_member_metadata=classic_member_metadata(5000, ()))
    r = classic_heartbeat(env, GID, "unknown-member-id", 10, instance_id="instance-id")
    assert r.error_code == E.FENCED_INSTANCE_ID


def test_classic_group_heartbeat_to_consumer_with_illegal_generation_id():
    """testClassicGroupHeartbeatToConsumerWithIllegalGenerationId: a generation other than the member epoch."""
    env = CgEnv()
    _classic_member_group(env, member_epoch=10, classic_member_metadata=classic_member_metadata(5000, ()))
    assert classic_heartbeat(env, GID, "member-id", 9).error_code == E.ILLEGAL_GENERATION


def test_classic_group_heartbeat_to_consumer_with_member_not_using_classic_protocol():
    """testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol: a consumer-protocol member sending a
    classic Heartbeat is unknown to the classic protocol."""
    env = CgEnv()
    _classic_member_group(env, member_epoch=10)
    assert classic_heartbeat(env, GID, "member-id", 10).error_code == E.UNKNOWN_MEMBER_ID


def test_classic_group_sync_to_consumer_group_with_illegal_generation():
    """testClassicGroupSyncToConsumerGroupWithIllegalGeneration."""
    env = CgEnv(**{"group.consumer.migration.policy": "downgrade"})
    _classic_member_group(env, member_epoch=10,
                          classic_member_metadata=classic_member_metadata(5000, (("range", sub(["foo"])),)))
    assert classic_sync(env, GID, "member-id", 9).error_code == E.ILLEGAL_GENERATION


def test_classic_group_sync_to_consumer_group_with_unknown_member_id():
    """testClassicGroupSyncToConsumerGroupWithUnknownMemberId: an unknown member id, an unknown instance id, a
    member not using the classic protocol: UNKNOWN_MEMBER_ID."""
    env = CgEnv(**{"group.consumer.migration.policy": "downgrade"})
    _classic_member_group(env)
    assert classic_sync(env, GID, "another-member-id", 10).error_code == E.UNKNOWN_MEMBER_ID
    assert classic_sync(env, GID, "member-id", 10, instance_id="unknown-instance-id").error_code == \
        E.UNKNOWN_MEMBER_ID
    assert classic_sync(env, GID, "member-id", 10).error_code == E.UNKNOWN_MEMBER_ID


def test_classic_group_sync_to_consumer_group_with_fenced_instance_id():
    """testClassicGroupSyncToConsumerGroupWithFencedInstanceId."""
    env = CgEnv(**{"group.consumer.migration.policy": "downgrade"})
    _classic_member_group(env, instance_id="instance-id")
    r = classic_sync(env, GID, "another-member-id", 10, instance_id="instance-id")
    assert r.error_code == E.FENCED_INSTANCE_ID


def test_classic_group_sync_to_consumer_group_with_inconsistent_group_protocol():
    """testClassicGroupSyncToConsumerGroupWithInconsistentGroupProtocol: another protocol name or type:
    INCONSISTENT_GROUP_PROTOCOL; null name and type pass the validation (the member gets its empty assignment,
    nothing written). On the wire nulls come from SyncGroup v0-4 (KafkaApis refuses them from v5 on)."""
    env = CgEnv(**{"group.consumer.migration.policy": "downgrade"})
    _classic_member_group(env, member_epoch=10,
                          classic_member_metadata=classic_member_metadata(5000, (("range", sub(["foo"])),)))
    assert classic_sync(env, GID, "member-id", 10, protocol_name="roundrobin").error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert classic_sync(env, GID, "member-id", 10, protocol_type="connect").error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    r = classic_sync(env, GID, "member-id", 10, protocol_name=None, protocol_type=None, version=4)
    assert r.error_code == 0 and env.last_records == []
    assert encode_assignment(ConsumerProtocolAssignment([])) == r.assignment


def test_classic_group_leave_to_consumer_group_without_valid_leave_group_member():
    """testClassicGroupLeaveToConsumerGroupWithoutValidLeaveGroupMember: only an unknown member: its
    UNKNOWN_MEMBER_ID, nothing written."""
    env = CgEnv()
    _classic_member_group(env)
    r = classic_leave(env, GID, [("unknown-member-id", None)])
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == \
        [("unknown-member-id", None, E.UNKNOWN_MEMBER_ID)]
    assert env.last_records == []


def _fenced_records(member_id: str, epoch: int) -> list:
    return [R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id=member_id),
            R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id=member_id),
            R.ConsumerGroupMemberMetadataTombstone(GID, member_id=member_id),
            R.ConsumerGroupMetadata(GID, epoch=epoch, metadata_hash=0),
            R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=epoch, assignment_timestamp_ms=0)]


def test_consumer_group_member_using_classic_protocol_fenced_when_session_timeout():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout: a classic Heartbeat arms the session
    timer with the member's own session timeout; its expiry fences the member."""
    env = CgEnv()
    meta = classic_member_metadata(5000, (("range", sub(["foo"])),))
    env.build_group(GID, 10, members=[M("member-id", classic_member_metadata=meta, member_epoch=10)])
    assert classic_heartbeat(env, GID, "member-id", 10).error_code == 0
    assert env.timers() == {f"session-timeout-{GID}-member-id": env.now + 5000}
    assert env.advance(5000 + 1) == _fenced_records("member-id", 11)
    assert env.group(GID).members == {}


def test_consumer_group_member_using_classic_protocol_fenced_when_join_timeout():
    """testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout: behind the assignment epoch, a classic
    Heartbeat gets REBALANCE_IN_PROGRESS and arms the join timer (the rebalance timeout); the member does not
    rejoin in time and is fenced by ``join-<group>-<member>``."""
    env = CgEnv()
    meta = classic_member_metadata(5000, (("range", sub(["foo"])),))
    env.build_group(GID, 10, members=[M("member-id", rebalance_timeout_ms=500, classic_member_metadata=meta,
                                        member_epoch=9)], assignment_epoch=10)
    assert classic_heartbeat(env, GID, "member-id", 9).error_code == E.REBALANCE_IN_PROGRESS
    assert env.timers() == {f"session-timeout-{GID}-member-id": env.now + 5000,
                            f"join-{GID}-member-id": env.now + 500}
    assert env.advance(500 + 1) == _fenced_records("member-id", 11)
    assert env.timers() == {}


def test_joining_consumer_group_throws_exception_if_protocol_is_not_supported():
    """testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported: no protocol in common with the group's
    members, or another protocol type: INCONSISTENT_GROUP_PROTOCOL."""
    env = CgEnv()
    meta = classic_member_metadata(5000, (("roundrobin", sub([])),))
    env.build_group(GID, 10, members=[M("member-id", state=S, member_epoch=10, previous_member_epoch=10,
                                        classic_member_metadata=meta)])
    assert classic_join(env, GID, "", [("range", sub([]))]).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert classic_join(env, GID, "", [("range", sub([]))], protocol_type="connect").error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert env.last_records == []


def test_joining_consumer_group_throws_exception_if_group_over_max_size():
    """testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize: GROUP_MAX_SIZE_REACHED (JoinGroup carries no
    message; Kafka's is "The consumer group has reached its maximum capacity of 1 members.")."""
    env = CgEnv(**{"group.consumer.max.size": 1})
    env.build_group(GID, 10, members=[M("member-id", state=S, member_epoch=10, previous_member_epoch=10)])
    assert classic_join(env, GID, "", [("range", sub([]))]).error_code == E.GROUP_MAX_SIZE_REACHED


def _static_join_group(env: CgEnv, instance_id: str | None):
    protocols = [("range", sub(["foo", "bar"], [("foo", [0, 1])]))]
    meta = classic_member_metadata(5000, tuple(protocols))
    env.build_group(GID, 10, members=[M("member-id-1", instance_id=instance_id, classic_member_metadata=meta),
                                      M("member-id-2")])
    return protocols


def test_static_member_joining_consumer_group_with_unknown_instance_id():
    """testStaticMemberJoiningConsumerGroupWithUnknownInstanceId: a known member id with an instance id the group
    does not know: UNKNOWN_MEMBER_ID."""
    env = CgEnv()
    protocols = _static_join_group(env, None)
    assert classic_join(env, GID, "member-id-1", protocols, instance_id="instance-id").error_code == \
        E.UNKNOWN_MEMBER_ID


def test_static_member_joining_consumer_group_with_unmatched_member_id():
    """testStaticMemberJoiningConsumerGroupWithUnmatchedMemberId: the instance id with another member id:
    FENCED_INSTANCE_ID."""
    env = CgEnv()
    protocols = _static_join_group(env, "instance-id")
    assert classic_join(env, GID, "another-member-id", protocols, instance_id="instance-id").error_code == \
        E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("user_data,expect_upgrade", [(None, True), (b"", True), (b"\x00", False)])
def test_consumer_group_heartbeat_with_custom_assignor_classic_group(user_data, expect_upgrade):
    """testConsumerGroupHeartbeatWithCustomAssignorClassicGroup: a member's assignment with user data means a custom
    assignor: no upgrade, GROUP_ID_NOT_FOUND with validateOnlineUpgrade's message."""
    env = CgEnv(topics={"foo": 1, "bar": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    env.assignor.prepare({"member-id-1": asg(foo=[0]), "member-id-2": asg(bar=[0])})
    meta = sub(["foo", "bar"], [("foo", [0]), ("bar", [0])])
    assignment = encode_assignment(ConsumerProtocolAssignment([("foo", [0]), ("bar", [0])], user_data))
    env.replay(R.GroupMetadata(GID, protocol_type="consumer", generation_id=1, protocol_name="range",
                               leader="member-id-1", current_state_timestamp_ms=1000, members=(
                                   R.MemberMetadata("member-id-1", None, "client-id", "client-host", 10000, 5000,
                                                    meta, assignment),)))
    kw = dict(rebalance_timeout_ms=5000, assignor="range", names=["foo", "bar"], owned={})
    if expect_upgrade:
        assert env.heartbeat(GID, "member-id-2", 0, **kw).error_code == 0
        assert env.group(GID) is not None
    else:
        assert env.heartbeat_error(GID, "member-id-2", 0, **kw) == (
            E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group group-id to consumer group because an unsupported "
            "custom assignor is in use. Please refer to the documentation or switch to a default assignor before "
            "re-attempting the upgrade.")
        assert env.svc.group(GID) is not None


def test_consumer_group_heartbeat_with_preparing_rebalance_classic_group():
    """testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup: the leader's rejoin put the classic group in
    PreparingRebalance (its JoinGroup parked); a consumer-protocol member upgrades the group: the parked JoinGroup
    is answered REBALANCE_IN_PROGRESS, the members keep their assignments at epoch 0, the new member bumps the
    epoch to 1."""
    from coordinator import PARKED
    env = CgEnv(topics={"foo": 2, "bar": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    env.assignor.prepare({"member-id-1": asg(foo=[0]), "member-id-2": asg(bar=[0]), "member-id-3": asg(foo=[1])})
    p1 = sub(["foo", "bar"], [("foo", [0, 1])])
    p2 = sub(["foo", "bar"], [("bar", [0])])
    a1 = encode_assignment(ConsumerProtocolAssignment([("foo", [0, 1])]))
    a2 = encode_assignment(ConsumerProtocolAssignment([("bar", [0])]))
    env.replay(R.GroupMetadata(GID, protocol_type="consumer", generation_id=0, protocol_name="range",
                               leader="member-id-1", current_state_timestamp_ms=1000, members=(
                                   R.MemberMetadata("member-id-1", None, "client-id", "client-host", 10000, 5000, p1,
                                                    a1),
                                   R.MemberMetadata("member-id-2", None, "client-id", "client-host", 10000, 5000, p2,
                                                    a2))))
    assert classic_join(env, GID, "member-id-1", [("range", p1)], session_timeout_ms=5000,
                        rebalance_timeout_ms=10000) is PARKED
    assert str(env.svc.group(GID).state) == "PreparingRebalance"
    join_request_id = env._rid
    r = env.heartbeat(GID, "member-id-3", 0, rebalance_timeout_ms=5000, assignor="range", names=["foo", "bar"],
                      owned={})
    assert (r.error_code, r.member_epoch) == (0, 1)
    meta = lambda p: classic_member_metadata(5000, (("range", p),))  # noqa: E731
    m1 = M("member-id-1", member_epoch=0, previous_member_epoch=0, client_id="client-id", client_host="client-host",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=10000, classic_member_metadata=meta(p1),
           assigned_partitions=ep(0, foo=[0, 1]))
    m2 = M("member-id-2", member_epoch=0, previous_member_epoch=0, client_id="client-id", client_host="client-host",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=10000, classic_member_metadata=meta(p2),
           assigned_partitions=ep(0, bar=[0]))
    m3 = M("member-id-3", member_epoch=1, previous_member_epoch=0, state=UNREL, server_assignor_name="range",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=5000)
    h = env.metadata_hash("foo", "bar")
    assert_records([
        R.GroupTombstone(GID, reason="upgraded the classic group to a consumer group"),
        member_metadata_record(GID, m1), member_metadata_record(GID, m2),
        R.ConsumerGroupMetadata(GID, epoch=0, metadata_hash=h),
        target_assignment_record(GID, "member-id-1", asg(foo=[0, 1])),
        target_assignment_record(GID, "member-id-2", asg(bar=[0])),
        R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=0, assignment_timestamp_ms=0),
        current_assignment_record(GID, m1), current_assignment_record(GID, m2),
        member_metadata_record(GID, m3),
        R.ConsumerGroupMetadata(GID, epoch=1, metadata_hash=h),
        target_assignment_record(GID, "member-id-1", asg(foo=[0])),
        target_assignment_record(GID, "member-id-3", asg(foo=[1])),
        R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=1, assignment_timestamp_ms=env.now),
        current_assignment_record(GID, m3)], durable(env.last_records))
    assert env.last_output.response(join_request_id).error_code == E.REBALANCE_IN_PROGRESS
    timers = env.timers()
    assert (timers[f"session-timeout-{GID}-member-id-1"], timers[f"session-timeout-{GID}-member-id-2"],
            timers[f"session-timeout-{GID}-member-id-3"]) == (env.now + 5000, env.now + 5000, env.now + 45000)


def test_no_conversion_when_size_exceeds_classic_max_group_size():
    """testNoConversionWhenSizeExceedsClassicMaxGroupSize: the last consumer-protocol member leaves but the classic
    members outnumber group.max.size: the group stays a consumer group (validateOnlineDowngrade)."""
    env = CgEnv(**{"group.max.size": 1, "group.consumer.migration.policy": "downgrade"})
    meta = R.ClassicMemberMetadata(0, (("range", b""),))
    env.build_group(GID, 10, members=[M("1", client_id="", client_host=""),
                                      M("2", client_id="", client_host="", classic_member_metadata=meta),
                                      M("3", client_id="", client_host="", classic_member_metadata=meta)])
    r = env.heartbeat(GID, "1", -1, rebalance_timeout_ms=5000)
    assert r.member_epoch == -1
    assert env.group(GID) is not None and env.svc.group(GID) is None


def test_classic_group_heartbeat_to_consumer_group_maintains_session():
    """testClassicGroupHeartbeatToConsumerGroupMaintainsSession: each classic Heartbeat re-arms the session timer
    with the member's session timeout."""
    env = CgEnv()
    meta = classic_member_metadata(5000, (("range", sub(["foo"])),))
    env.build_group(GID, 10, members=[M("member-id", classic_member_metadata=meta, member_epoch=10)])
    assert classic_heartbeat(env, GID, "member-id", 10).error_code == 0
    assert env.timers() == {f"session-timeout-{GID}-member-id": env.now + 5000}
    for _ in range(2):
        assert env.advance(2500) == []
        assert classic_heartbeat(env, GID, "member-id", 10).error_code == 0
        assert env.timers() == {f"session-timeout-{GID}-member-id": env.now + 5000}


def _synced_partitions(env: CgEnv, member_id: str, generation: int) -> list[tuple[str, int]]:
    """``verifyClassicGroupSyncToConsumerGroup``: SyncGroup writes nothing, re-arms the session timer, disarms the
    sync timer; the member's partitions from the assignment (Kafka compares them as a set)."""
    from protocol.consumer_protocol import decode_assignment
    r = classic_sync(env, GID, member_id, generation)
    assert (r.error_code, r.protocol_type, r.protocol_name, env.last_records) == (0, "consumer", "range", [])
    timers = env.timers()
    assert timers[f"session-timeout-{GID}-{member_id}"] == env.now + 5000 and f"sync-{GID}-{member_id}" not in timers
    return sorted((t, p) for t, ps in decode_assignment(r.assignment)[1].assigned_partitions for p in ps)


def test_reconciliation_in_joining_consumer_group_with_cooperative_protocol():
    """testReconciliationInJoiningConsumerGroupWithCooperativeProtocol: a classic member of a consumer group
    reconciles through JoinGroup/SyncGroup: a new subscription bumps the epoch (UNREVOKED_PARTITIONS, JoinGroup at
    the old generation without bar-0), REBALANCE_IN_PROGRESS on its Heartbeat until it rejoins; the rejoin owning
    only foo-0 moves it to UNRELEASED_PARTITIONS at 11 (foo-1 still with member 2); once member 2 released it,
    REBALANCE_IN_PROGRESS again and the next rejoin is STABLE with foo-0, foo-1, zar-0."""
    env = CgEnv(topics={"foo": 2, "bar": 1, "zar": 1}, racks=True)
    p_old = sub(["foo", "bar"], [("foo", [0]), ("bar", [0])])
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500,
           subscribed_topic_names=["foo", "bar"], assigned_partitions=ep(10, foo=[0], bar=[0]),
           classic_member_metadata=classic_member_metadata(5000, (("range", p_old),)))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500,
           subscribed_topic_names=["foo", "bar"], assigned_partitions=ep(10, foo=[1]))
    env.build_group(GID, 10, members=[m1, m2], assignments={"m1": asg(foo=[0], bar=[0]), "m2": asg(foo=[1])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    env.assignor.prepare({"m1": asg(foo=[0, 1], zar=[0]), "m2": asg(bar=[0])})
    topics = ["foo", "bar", "zar"]

    # 1. A new subscription: epoch 11, a new target; m1 must revoke bar-0 first.
    p1 = sub(topics, [("foo", [0]), ("bar", [0])])
    r = classic_join(env, GID, "m1", [("range", p1)], session_timeout_ms=5000, rebalance_timeout_ms=500)
    e1 = M("m1", member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500, state=UNREV,
           subscribed_topic_names=topics, assigned_partitions=ep(10, foo=[0]),
           partitions_pending_revocation=ep(10, bar=[0]),
           classic_member_metadata=classic_member_metadata(5000, (("range", p1),)))
    assert_unordered_records([
        [member_metadata_record(GID, e1)],
        [R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash(*topics))],
        [target_assignment_record(GID, "m1", asg(foo=[0, 1], zar=[0])), target_assignment_record(GID, "m2", asg(bar=[0]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=11, assignment_timestamp_ms=env.now)],
        [current_assignment_record(GID, e1)]], env.last_records)
    assert (r.error_code, r.member_id, r.generation_id, r.protocol_type, r.protocol_name) == \
        (0, "m1", 10, "consumer", "range")
    timers = env.timers()
    assert (timers[f"session-timeout-{GID}-m1"], timers[f"sync-{GID}-m1"]) == (env.now + 5000, env.now + 500)
    assert _synced_partitions(env, "m1", 10) == [("foo", 0)]
    assert classic_heartbeat(env, GID, "m1", 10).error_code == E.REBALANCE_IN_PROGRESS
    assert env.timers()[f"join-{GID}-m1"] == env.now + 500

    # 2. The rejoin without bar-0: epoch 11, zar-0 assigned, foo-1 not released yet by m2.
    p2 = sub(topics, [("foo", [0])])
    r = classic_join(env, GID, "m1", [("range", p2)], session_timeout_ms=5000, rebalance_timeout_ms=500)
    e2 = e1.replace(member_epoch=11, state=UNREL, partitions_pending_revocation={},
                    assigned_partitions={FOO_ID: {0: 10}, CgEnv.tid("zar"): {0: 11}},
                    classic_member_metadata=classic_member_metadata(5000, (("range", p2),)))
    assert_records([member_metadata_record(GID, e2), current_assignment_record(GID, e2)], env.last_records)
    assert f"join-{GID}-m1" not in env.timers()
    assert (r.error_code, r.generation_id) == (0, 11)
    assert env.timers()[f"sync-{GID}-m1"] == env.now + 500
    assert _synced_partitions(env, "m1", 11) == [("foo", 0), ("zar", 0)]

    # 3. m2 releases foo-1; m1's Heartbeat asks it to rejoin; the rejoin gets everything: STABLE.
    env.heartbeat(GID, "m2", 10, owned={})
    assert classic_heartbeat(env, GID, "m1", 11).error_code == E.REBALANCE_IN_PROGRESS
    assert env.timers()[f"join-{GID}-m1"] == env.now + 500
    p3 = sub(topics, [("foo", [0]), ("zar", [0])])
    r = classic_join(env, GID, "m1", [("range", p3)], session_timeout_ms=5000, rebalance_timeout_ms=500)
    e3 = e2.replace(state=S, previous_member_epoch=11,
                    assigned_partitions={FOO_ID: {0: 10, 1: 11}, CgEnv.tid("zar"): {0: 11}},
                    classic_member_metadata=classic_member_metadata(5000, (("range", p3),)))
    assert_records([member_metadata_record(GID, e3), current_assignment_record(GID, e3)], env.last_records)
    assert f"join-{GID}-m1" not in env.timers()
    assert (r.error_code, r.generation_id) == (0, 11)
    assert _synced_partitions(env, "m1", 11) == [("foo", 0), ("foo", 1), ("zar", 0)]


def test_joining_consumer_group_with_new_static_member():
    """testJoiningConsumerGroupWithNewStaticMember: a classic static member (unknown member id, new instance id)
    joins a consumer group at once -- no MEMBER_ID_REQUIRED for a static member -- as a consumer group member with
    classic metadata at the bumped epoch; the assignor (Kafka's NoOpPartitionAssignor: everyone keeps what they
    have) gives it nothing; the JoinGroup answer carries the epoch as generation; session and sync timers."""
    env = CgEnv(topics={"foo": 2, "bar": 1}, racks=True)
    m = M("m", state=S, member_epoch=10, previous_member_epoch=10, assigned_partitions=ep(10, foo=[0, 1]))
    env.build_group(GID, 10, members=[m], assignments={"m": asg(foo=[0, 1])}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    env.assignor.prepare({"m": asg(foo=[0, 1])})  # NoOpPartitionAssignor
    protocols = [("range", sub(["foo", "bar"]))]
    r = classic_join(env, GID, "", protocols, instance_id="instance-id", session_timeout_ms=500,
                     rebalance_timeout_ms=500)
    new_id = r.member_id
    assert new_id and (r.error_code, r.generation_id, r.protocol_type, r.protocol_name) == (0, 11, "consumer", "range")
    expected = M(new_id, member_epoch=11, previous_member_epoch=0, instance_id="instance-id", state=S,
                 subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=500,
                 classic_member_metadata=classic_member_metadata(500, protocols))
    assert_records([member_metadata_record(GID, expected),
                    R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash("foo", "bar")),
                    target_assignment_record(GID, new_id, {}),
                    R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=11, assignment_timestamp_ms=1000),
                    current_assignment_record(GID, expected)], durable(env.last_records))
    timers = env.timers()
    assert timers[f"session-timeout-{GID}-{new_id}"] == 1000 + 500
    assert timers[f"sync-{GID}-{new_id}"] == 1000 + 500


def test_joining_consumer_group_replacing_existing_static_member():
    """testJoiningConsumerGroupReplacingExistingStaticMember: a classic static member rejoining with an unknown
    member id replaces the consumer group's member with its instance id: the old member's tombstones, the new id
    copied from it (epoch 0, its partitions and target), then updated with classic metadata at the old epoch; no
    epoch bump (same subscription); the JoinGroup answer carries generation 10."""
    env = CgEnv(topics={"foo": 2}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    old = M("old", instance_id="instance-id", state=S, member_epoch=10, previous_member_epoch=10,
            subscribed_topic_names=["foo"], rebalance_timeout_ms=500, assigned_partitions=ep(10, foo=[0, 1]),
            client_id="", client_host="")  # Kafka's builder sets neither
    env.build_group(GID, 10, members=[old], assignments={"old": asg(foo=[0, 1])}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    env.assignor.prepare({})
    protocols = [("range", sub(["foo"]))]
    r = classic_join(env, GID, "", protocols, instance_id="instance-id", session_timeout_ms=500,
                     rebalance_timeout_ms=500)
    new_id = r.member_id
    assert new_id and new_id != "old"
    assert (r.error_code, r.generation_id, r.protocol_type, r.protocol_name) == (0, 10, "consumer", "range")
    copied = M(new_id, member_epoch=0, previous_member_epoch=0, instance_id="instance-id", state=S,
               subscribed_topic_names=["foo"], assigned_partitions=ep(10, foo=[0, 1]), rebalance_timeout_ms=500,
               client_id="", client_host="")
    updated = M(new_id, member_epoch=10, previous_member_epoch=0, instance_id="instance-id", state=S,
                subscribed_topic_names=["foo"], assigned_partitions=ep(10, foo=[0, 1]), rebalance_timeout_ms=500,
                classic_member_metadata=classic_member_metadata(500, protocols))
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="old"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="old"),
                    R.ConsumerGroupMemberMetadataTombstone(GID, member_id="old"),
                    member_metadata_record(GID, copied),
                    target_assignment_record(GID, new_id, asg(foo=[0, 1])),
                    current_assignment_record(GID, copied),
                    member_metadata_record(GID, updated),
                    current_assignment_record(GID, updated)], durable(env.last_records))
    timers = env.timers()
    assert timers[f"session-timeout-{GID}-{new_id}"] == 1000 + 500
    assert timers[f"sync-{GID}-{new_id}"] == 1000 + 500


def test_joining_consumer_group_with_existing_static_member_and_new_subscription():
    """testJoiningConsumerGroupWithExistingStaticMemberAndNewSubscription: a classic static member of a consumer
    group rejoins (its member id, no instance id in the request) with a new subscription: epoch bump, new targets;
    it reports no owned partitions, so bar-0 is revoked at once; foo-0 keeps the epoch it was assigned at (10),
    zar-0 is assigned at 11; generation 11."""
    env = CgEnv(topics={"foo": 2, "bar": 1, "zar": 1}, racks=True)
    old_protocols = [("range", sub(["foo", "bar"], owned=[("foo", [0, 1])]))]
    m1 = M("m1", instance_id="instance-id", state=S, member_epoch=10, previous_member_epoch=10,
           rebalance_timeout_ms=500, subscribed_topic_names=["foo", "bar"],
           assigned_partitions=ep(10, foo=[0], bar=[0]),
           classic_member_metadata=classic_member_metadata(5000, old_protocols))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500,
           subscribed_topic_names=["foo", "bar"], assigned_partitions=ep(10, foo=[1]))
    group_hash = env.metadata_hash("foo", "bar", "zar")
    env.build_group(GID, 10, members=[m1, m2], assignments={"m1": asg(foo=[0], bar=[0]), "m2": asg(foo=[1])},
                    assignment_epoch=10, metadata_hash=group_hash)
    env.assignor.prepare({"m1": asg(foo=[0], zar=[0]), "m2": asg(bar=[0], foo=[1])})
    protocols = [("range", sub(["foo", "bar", "zar"]))]
    r = classic_join(env, GID, "m1", protocols, session_timeout_ms=500, rebalance_timeout_ms=500)
    assert (r.error_code, r.member_id, r.generation_id, r.protocol_type, r.protocol_name) == \
        (0, "m1", 11, "consumer", "range")
    expected = M("m1", instance_id="instance-id", member_epoch=11, previous_member_epoch=10, rebalance_timeout_ms=500,
                 state=S, subscribed_topic_names=["foo", "bar", "zar"],
                 assigned_partitions={FOO_ID: {0: 10}, CgEnv.tid("zar"): {0: 11}},
                 classic_member_metadata=classic_member_metadata(500, protocols))
    assert_unordered_records([
        [member_metadata_record(GID, expected)],
        [R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=group_hash)],
        [target_assignment_record(GID, "m1", asg(foo=[0], zar=[0])),
         target_assignment_record(GID, "m2", asg(bar=[0], foo=[1]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=11, assignment_timestamp_ms=1000)],
        [current_assignment_record(GID, expected)]], durable(env.last_records))
    timers = env.timers()
    assert timers[f"session-timeout-{GID}-m1"] == 1000 + 500
    assert timers[f"sync-{GID}-m1"] == 1000 + 500


@pytest.mark.parametrize("subscription_changed", [False, True])
def test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member(subscription_changed):
    """testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember (policy downgrade): the only
    consumer-protocol member is static; a classic member with its instance id joins, replacing it (old member's
    tombstones, the new id copied at epoch 0, then updated with classic metadata -- at the bumped epoch 11 with the
    group epoch record if the subscription changed, else with its current assignment at 10), and the group is
    converted to a classic group of both members (generation 10, each with its target assignment), Stable when the
    subscription is unchanged, PreparingRebalance when it changed; the classic member 1 gets a heartbeat timer."""
    env = CgEnv(topics={"foo": 6, "bar": 2}, racks=True, **{"group.consumer.migration.policy": "downgrade"})
    protocols1 = (("range", sub(["foo", "bar"], [("foo", [0, 1, 2]), ("bar", [0, 1])])),)
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
           server_assignor_name="range", rebalance_timeout_ms=45000,
           classic_member_metadata=classic_member_metadata(5000, protocols1),
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
    old2 = M("old2", instance_id="instance-id", state=S, member_epoch=10, previous_member_epoch=9,
             subscribed_topic_names=["foo"], server_assignor_name="range", rebalance_timeout_ms=45000,
             assigned_partitions=ep(10, foo=[3, 4, 5]))
    env.build_group(GID, 10, members=[m1, old2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "old2": asg(foo=[3, 4, 5])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2], bar=[0, 1])})
    protocols2 = [("range", sub(["foo", "bar"] if subscription_changed else ["foo"]))]
    r = classic_join(env, GID, "", protocols2, instance_id="instance-id", session_timeout_ms=500,
                     rebalance_timeout_ms=500)
    new2 = r.member_id
    assert new2 and new2 != "old2"
    got = durable(env.last_records)
    copied = M(new2, instance_id="instance-id", state=S, member_epoch=0, previous_member_epoch=0,
               subscribed_topic_names=["foo"], server_assignor_name="range", rebalance_timeout_ms=45000,
               assigned_partitions=ep(10, foo=[3, 4, 5]))
    updated = M(new2, instance_id="instance-id", state=S, member_epoch=11 if subscription_changed else 10,
                previous_member_epoch=0, subscribed_topic_names=["foo", "bar"] if subscription_changed else ["foo"],
                server_assignor_name="range", rebalance_timeout_ms=500,
                classic_member_metadata=classic_member_metadata(500, protocols2),
                assigned_partitions=ep(10, foo=[3, 4, 5]))
    update = ([member_metadata_record(GID, updated),
               R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash("foo", "bar"))]
              if subscription_changed else
              [member_metadata_record(GID, updated), current_assignment_record(GID, updated)])
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="old2"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="old2"),
                    R.ConsumerGroupMemberMetadataTombstone(GID, member_id="old2"),
                    member_metadata_record(GID, copied),
                    target_assignment_record(GID, new2, asg(foo=[3, 4, 5])),
                    current_assignment_record(GID, copied)] + update, got[:6 + len(update)])
    downgrade = got[6 + len(update):]
    assert_unordered_records([
        [R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="m1"),
         R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id=new2)],
        [R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="m1"),
         R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id=new2)],
        [R.ConsumerGroupTargetAssignmentMetadataTombstone(GID)],
        [R.ConsumerGroupMemberMetadataTombstone(GID, member_id="m1"),
         R.ConsumerGroupMemberMetadataTombstone(GID, member_id=new2)],
        [R.ConsumerGroupPartitionMetadataTombstone(GID)], [R.ConsumerGroupMetadataTombstone(GID)]], downgrade[:-1])
    classic = downgrade[-1]
    from protocol.consumer_protocol import decode_assignment
    assert (classic.generation_id, classic.protocol_name, classic.leader in ("m1", new2)) == (10, "range", True)
    by_member = {m.member_id: m for m in classic.members}
    assert set(by_member) == {"m1", new2}
    assert sorted(decode_assignment(by_member["m1"].assignment)[1].assigned_partitions) == \
        [("bar", [0, 1]), ("foo", [0, 1, 2])]
    assert decode_assignment(by_member[new2].assignment)[1].assigned_partitions == [("foo", [3, 4, 5])]
    m2_rec = by_member[new2]
    assert (m2_rec.group_instance_id, m2_rec.rebalance_timeout_ms, m2_rec.session_timeout_ms) == \
        ("instance-id", 500, 500)
    assert f"heartbeat-{GID}-m1" in env.timers()
    assert env.group(GID) is None
    assert str(env.svc.group(GID).state) == ("PreparingRebalance" if subscription_changed else "Stable")


def test_reconciliation_in_joining_consumer_group_with_eager_protocol():
    """testReconciliationInJoiningConsumerGroupWithEagerProtocol: an eager classic member rejoins owning nothing,
    so bar-0 needs no revocation: straight to UNRELEASED_PARTITIONS at epoch 11 (foo-0 kept at 10, zar-0 at 11,
    foo-1 still with member 2), generation 11; once member 2 released foo-1, REBALANCE_IN_PROGRESS on its Heartbeat
    and the same JoinGroup again makes it STABLE with foo-1 at 11 -- only its current assignment is written."""
    env = CgEnv(topics={"foo": 2, "bar": 1, "zar": 1}, racks=True)
    p_old = sub(["foo", "bar"], [("foo", [0]), ("bar", [0])])
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500,
           subscribed_topic_names=["foo", "bar"], assigned_partitions=ep(10, foo=[0], bar=[0]),
           classic_member_metadata=classic_member_metadata(5000, (("range", p_old),)))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=500,
           subscribed_topic_names=["foo", "bar"], assigned_partitions=ep(10, foo=[1]))
    env.build_group(GID, 10, members=[m1, m2], assignments={"m1": asg(foo=[0], bar=[0]), "m2": asg(foo=[1])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    env.assignor.prepare({"m1": asg(foo=[0, 1], zar=[0]), "m2": asg(bar=[0])})
    topics = ["foo", "bar", "zar"]
    protocols = [("range", sub(topics))]
    r = classic_join(env, GID, "m1", protocols, session_timeout_ms=5000, rebalance_timeout_ms=500)
    e1 = M("m1", member_epoch=11, previous_member_epoch=10, rebalance_timeout_ms=500, state=UNREL,
           subscribed_topic_names=topics, assigned_partitions={FOO_ID: {0: 10}, CgEnv.tid("zar"): {0: 11}},
           classic_member_metadata=classic_member_metadata(5000, protocols))
    assert_unordered_records([
        [member_metadata_record(GID, e1)],
        [R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash(*topics))],
        [target_assignment_record(GID, "m1", asg(foo=[0, 1], zar=[0])),
         target_assignment_record(GID, "m2", asg(bar=[0]))],
        [R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=11, assignment_timestamp_ms=env.now)],
        [current_assignment_record(GID, e1)]], durable(env.last_records))
    assert env.member(GID, "m1").state == UNREL
    assert (r.error_code, r.member_id, r.generation_id, r.protocol_type, r.protocol_name) == \
        (0, "m1", 11, "consumer", "range")
    timers = env.timers()
    assert (timers[f"session-timeout-{GID}-m1"], timers[f"sync-{GID}-m1"]) == (env.now + 5000, env.now + 500)
    assert _synced_partitions(env, "m1", 11) == [("foo", 0), ("zar", 0)]

    env.heartbeat(GID, "m2", 10, owned={})  # m2 revokes foo-1
    assert classic_heartbeat(env, GID, "m1", 11).error_code == E.REBALANCE_IN_PROGRESS
    assert env.timers()[f"join-{GID}-m1"] == env.now + 500
    r = classic_join(env, GID, "m1", protocols, session_timeout_ms=5000, rebalance_timeout_ms=500)
    e2 = e1.replace(state=S, previous_member_epoch=11,
                    assigned_partitions={FOO_ID: {0: 10, 1: 11}, CgEnv.tid("zar"): {0: 11}})
    assert_records([current_assignment_record(GID, e2)], durable(env.last_records))
    assert env.member(GID, "m1").state == S and f"join-{GID}-m1" not in env.timers()
    assert (r.error_code, r.generation_id, r.protocol_name) == (0, 11, "range")
    timers = env.timers()
    assert (timers[f"session-timeout-{GID}-m1"], timers[f"sync-{GID}-m1"]) == (env.now + 5000, env.now + 500)
    assert _synced_partitions(env, "m1", 11) == [("foo", 0), ("foo", 1), ("zar", 0)]


def test_consumer_group_heartbeat_to_classic_group_from_existing_static_member():
    """testConsumerGroupHeartbeatToClassicGroupFromExistingStaticMember: a Stable classic group whose only member is
    static; that member restarts with the consumer protocol (its own new member id, same instance id, epoch 0):
    the group is upgraded (the classic member converted at the generation), the converted member -- it uses the
    classic protocol -- is replaced by the new member (tombstones, the copy at epoch 0, then STABLE at the
    generation with its partitions; no new target assignment); the client's member id is kept."""
    env = CgEnv(topics={"foo": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    env.assignor.prepare({})
    protocols = (("range", sub(["foo"], [("foo", [0])])),)
    assignment = encode_assignment(ConsumerProtocolAssignment([("foo", [0])]))
    env.replay(R.GroupMetadata(GID, protocol_type="consumer", generation_id=1, protocol_name="range",
                               leader="member-id", current_state_timestamp_ms=1000, members=(
                                   R.MemberMetadata("member-id", "instance-id", "client", "/127.0.0.1", 10000, 5000,
                                                    protocols[0][1], assignment),)))
    new_id = "new-member-id-AAAAAAAAAA"
    r = env.heartbeat(GID, new_id, 0, instance_id="instance-id", rebalance_timeout_ms=5000, assignor="range",
                      names=["foo"], owned={})
    assert (r.error_code, r.member_id, r.member_epoch) == (0, new_id, 1)
    classic = M("member-id", instance_id="instance-id", member_epoch=1, previous_member_epoch=1,
                subscribed_topic_names=["foo"], rebalance_timeout_ms=10000,
                classic_member_metadata=classic_member_metadata(5000, protocols),
                assigned_partitions=ep(1, foo=[0]))
    replacing = M(new_id, instance_id="instance-id", member_epoch=0, previous_member_epoch=0, state=S,
                  subscribed_topic_names=["foo"], rebalance_timeout_ms=10000,
                  classic_member_metadata=classic_member_metadata(5000, protocols),
                  assigned_partitions=ep(1, foo=[0]))
    final = replacing.replace(member_epoch=1, server_assignor_name="range", rebalance_timeout_ms=5000,
                              classic_member_metadata=None)
    assert_records([
        R.GroupTombstone(GID, reason="upgraded the classic group to a consumer group"),
        member_metadata_record(GID, classic),
        R.ConsumerGroupMetadata(GID, epoch=1, metadata_hash=env.metadata_hash("foo")),
        target_assignment_record(GID, "member-id", asg(foo=[0])),
        R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=1, assignment_timestamp_ms=0),
        current_assignment_record(GID, classic),
        R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="member-id"),
        R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="member-id"),
        R.ConsumerGroupMemberMetadataTombstone(GID, member_id="member-id"),
        member_metadata_record(GID, replacing),
        target_assignment_record(GID, new_id, asg(foo=[0])),
        current_assignment_record(GID, replacing),
        member_metadata_record(GID, final),
        current_assignment_record(GID, final)], durable(env.last_records))
    assert env.timers()[f"session-timeout-{GID}-{new_id}"] == env.now + 45000


POISON_SUBSCRIPTION = bytes([0, 1, 0xFF, 0xFF, 0xFF, 0xFF])  # version 1, topics array length -1: fails when read


def test_classic_group_join_to_consumer_group_fails_on_malformed_subscription_metadata():
    """testClassicGroupJoinToConsumerGroupFailsOnMalformedSubscriptionMetadata: a classic JoinGroup to a consumer
    group whose subscription cannot be read -> INCONSISTENT_GROUP_PROTOCOL, nothing written."""
    env = CgEnv(topics={"foo": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    m = M("existing", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"],
          server_assignor_name="range", rebalance_timeout_ms=45000, assigned_partitions=ep(10, foo=[0]))
    env.build_group(GID, 10, members=[m], assignments={"existing": asg(foo=[0])}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))
    r = classic_join(env, GID, "new-member", [("range", POISON_SUBSCRIPTION)], session_timeout_ms=5000,
                     rebalance_timeout_ms=45000)
    assert r.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert durable(env.last_records) == []


def test_consumer_group_heartbeat_with_stable_classic_group_fails_on_malformed_protocol():
    """testConsumerGroupHeartbeatWithStableClassicGroupFailsOnMalformedProtocol: the upgrade cannot read the
    classic member's subscription -> GROUP_ID_NOT_FOUND with Kafka's message; the classic group stays."""
    env = CgEnv(topics={"foo": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    assignment = encode_assignment(ConsumerProtocolAssignment([("foo", [0])]))
    env.replay(R.GroupMetadata(GID, protocol_type="consumer", generation_id=0, protocol_name="range",
                               leader="member-id-1", current_state_timestamp_ms=1000, members=(
                                   R.MemberMetadata("member-id-1", None, "client-id", "client-host", 10000, 5000,
                                                    POISON_SUBSCRIPTION, assignment),)))
    code, msg = env.heartbeat_error(GID, "member-id-2", 0, rebalance_timeout_ms=5000, assignor="range",
                                    names=["foo"], owned={})
    assert (code, msg) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group group-id to consumer group because "
                                                 "the embedded consumer protocol is malformed.")
    assert env.svc.group(GID) is not None and env.group(GID) is None


def _assignment_delay_group(env: CgEnv):
    """testClassicGroup{Heartbeat,Sync}ToConsumerGroupDuringAssignmentDelay's group: epoch 11 but the target still
    at 10 (member 2 has just moved from foo to bar); member 1 uses the classic protocol."""
    protocols = (("range", sub(["foo"], [("foo", [0, 1, 2])])),)
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo"],
           server_assignor_name="range", rebalance_timeout_ms=45000,
           classic_member_metadata=classic_member_metadata(5000, protocols), assigned_partitions=ep(10, foo=[0, 1, 2]))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["bar"],
           server_assignor_name="range", rebalance_timeout_ms=45000, assigned_partitions={})
    env.build_group(GID, 11, members=[m1, m2], assignments={"m1": asg(foo=[0, 1, 2]), "m2": asg(foo=[3, 4, 5])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    env.assignor.prepare({"m1": asg(foo=range(6)), "m2": asg(bar=[0, 1, 2])})


def test_classic_group_heartbeat_to_consumer_group_during_assignment_delay():
    """testClassicGroupHeartbeatToConsumerGroupDuringAssignmentDelay: while the group epoch is ahead of the target
    (not computed yet), the classic member's Heartbeat is NONE; once member 2's heartbeat computed it, the classic
    member is told REBALANCE_IN_PROGRESS."""
    env = CgEnv(topics={"foo": 6, "bar": 3}, racks=True)
    _assignment_delay_group(env)
    assert classic_heartbeat(env, GID, "m1", 10).error_code == E.NONE
    r = env.heartbeat(GID, "m2", 10)
    assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (0, 11, 5000)
    assert assignment_of(r) == {CgEnv.tid("bar"): [0, 1, 2]}
    assert classic_heartbeat(env, GID, "m1", 10).error_code == E.REBALANCE_IN_PROGRESS


def test_classic_group_sync_to_consumer_group_during_assignment_delay():
    """testClassicGroupSyncToConsumerGroupDuringAssignmentDelay: the same with SyncGroup: answered while the target
    is behind, REBALANCE_IN_PROGRESS once it is computed."""
    env = CgEnv(topics={"foo": 6, "bar": 3}, racks=True)
    _assignment_delay_group(env)
    assert classic_sync(env, GID, "m1", 10).error_code == E.NONE
    r = env.heartbeat(GID, "m2", 10)
    assert (r.member_epoch, assignment_of(r)) == (11, {CgEnv.tid("bar"): [0, 1, 2]})
    assert classic_sync(env, GID, "m1", 10).error_code == E.REBALANCE_IN_PROGRESS


def test_consumer_group_heartbeat_to_classic_group_with_empty_assignment_member():
    """testConsumerGroupHeartbeatToClassicGroupWithEmptyAssignmentMember: a classic group in CompletingRebalance
    whose member never synced (empty assignment) is upgraded by a consumer-protocol member: member 1 converted at
    generation 1 with nothing assigned, then member 2 joins at epoch 2 (STABLE, nothing to assign with the no-op
    assignor); session timers: the classic member's own, 45 s for member 2."""
    env = CgEnv(topics={"foo": 1, "bar": 1}, racks=True, **{"group.consumer.migration.policy": "upgrade",
                                                             "group.initial.rebalance.delay.ms": 3000})
    env.assignor.prepare({})  # NoOpPartitionAssignor: everyone keeps what they have
    protocols = (("range", sub(["foo", "bar"])),)
    first = classic_join(env, GID, "", list(protocols), session_timeout_ms=5000, rebalance_timeout_ms=10000,
                         version=3)  # no MEMBER_ID_REQUIRED round (Kafka's test joins without it)
    env.advance(3000 + 1)
    m1_id = env.svc.group(GID).leader_id
    assert str(env.svc.group(GID).state) == "CompletingRebalance" and first is not None
    r = env.heartbeat(GID, "member-id-2", 0, rebalance_timeout_ms=5000, assignor="range", names=["foo", "bar"],
                      owned={})
    assert (r.error_code, r.member_epoch) == (0, 2)
    m1 = M(m1_id, member_epoch=1, previous_member_epoch=1, state=S, subscribed_topic_names=["foo", "bar"],
           rebalance_timeout_ms=10000, classic_member_metadata=classic_member_metadata(5000, protocols),
           assigned_partitions={})
    m2 = M("member-id-2", member_epoch=2, previous_member_epoch=0, state=S, server_assignor_name="range",
           subscribed_topic_names=["foo", "bar"], rebalance_timeout_ms=5000, assigned_partitions={})
    h = env.metadata_hash("foo", "bar")
    assert_records([R.GroupTombstone(GID, reason="upgraded the classic group to a consumer group"),
                    member_metadata_record(GID, m1), R.ConsumerGroupMetadata(GID, epoch=1, metadata_hash=h),
                    target_assignment_record(GID, m1_id, {}),
                    R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=1, assignment_timestamp_ms=0),
                    current_assignment_record(GID, m1),
                    member_metadata_record(GID, m2), R.ConsumerGroupMetadata(GID, epoch=2, metadata_hash=h),
                    target_assignment_record(GID, "member-id-2", {}),
                    R.ConsumerGroupTargetAssignmentMetadata(GID, assignment_epoch=2, assignment_timestamp_ms=env.now),
                    current_assignment_record(GID, m2)], durable(env.last_records))
    timers = env.timers()
    assert (timers[f"session-timeout-{GID}-{m1_id}"], timers[f"session-timeout-{GID}-member-id-2"]) == \
        (env.now + 5000, env.now + 45000)


def test_last_consumer_protocol_member_leaving_consumer_group_by_admin_api():
    """testLastConsumerProtocolMemberLeavingConsumerGroupByAdminApi (policy downgrade): an admin LeaveGroup removes
    a static classic member by member id, a dynamic consumer-protocol member by member id and a static
    consumer-protocol member by instance id alone; only dynamic classic member 1 is left, so the group is
    converted to a classic group of member 1 (generation 10, its target foo-0), which rebalances at once."""
    env = CgEnv(topics={"foo": 2, "bar": 2}, racks=True, **{"group.consumer.migration.policy": "downgrade"})
    p1 = (("range", sub(["foo", "bar"], [("foo", [0])])),)
    p2 = (("range", sub(["foo", "bar"], [("foo", [1])])),)
    common = dict(state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                  server_assignor_name="range", rebalance_timeout_ms=45000)
    members = [M("m1", classic_member_metadata=classic_member_metadata(5000, p1),
                 assigned_partitions=ep(11, foo=[0]), **common),
               M("m2", instance_id="instance-id-2", classic_member_metadata=classic_member_metadata(5000, p2),
                 assigned_partitions=ep(10, foo=[1]), **common),
               M("m3", assigned_partitions=ep(10, bar=[0]), **common),
               M("m4", instance_id="instance-id-4", assigned_partitions=ep(10, bar=[1]), **common)]
    env.build_group(GID, 10, members=members, assignments={"m1": asg(foo=[0]), "m2": asg(foo=[1]),
                                                          "m3": asg(bar=[0]), "m4": asg(bar=[1])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    r = classic_leave(env, GID, [("m2", None), ("m3", None), ("", "instance-id-4")])
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == \
        [("m2", None, 0), ("m3", None, 0), ("", "instance-id-4", 0)]
    got = durable(env.last_records)
    every = ["m1", "m2", "m3", "m4"]
    assert_unordered_records([
        [R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id=m) for m in every],
        [R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id=m) for m in every],
        [R.ConsumerGroupTargetAssignmentMetadataTombstone(GID)],
        [R.ConsumerGroupMemberMetadataTombstone(GID, member_id=m) for m in every],
        [R.ConsumerGroupPartitionMetadataTombstone(GID)], [R.ConsumerGroupMetadataTombstone(GID)]], got[:-1])
    classic = got[-1]
    from protocol.consumer_protocol import decode_assignment
    assert (classic.generation_id, classic.protocol_name, classic.leader, [m.member_id for m in classic.members]) == \
        (10, "range", "m1", ["m1"])
    assert decode_assignment(classic.members[0].assignment)[1].assigned_partitions == [("foo", [0])]
    timers = env.timers()
    assert f"heartbeat-{GID}-m1" in timers and f"join-{GID}" in timers
    assert str(env.svc.group(GID).state) == "PreparingRebalance" and env.group(GID) is None


def test_static_member_can_rejoin_consumer_group_with_classic_protocol_when_group_is_full():
    """testStaticMemberCanRejoinConsumerGroupWithClassicProtocolWhenGroupIsFull: group.consumer.max.size 1, the only
    member is static and left with epoch -2; a classic JoinGroup with its instance id (unknown member id) replaces
    it -- a member replacing itself does not count against the size -- with a new member id."""
    env = CgEnv(topics={}, **{"group.consumer.max.size": 1, "group.consumer.migration.policy": "upgrade"})
    old = M("old-member", instance_id="instance-id", state=S, member_epoch=-2, previous_member_epoch=9)
    env.build_group(GID, 10, members=[old], assignment_epoch=10)
    env.assignor.prepare({})
    r = classic_join(env, GID, "", [("range", sub([]))], instance_id="instance-id")
    assert r.error_code == E.NONE and r.member_id not in ("", "old-member")
    assert env.group(GID).static_member_id("instance-id") == r.member_id


@pytest.mark.parametrize("case", ["missing", "stale"])
def test_last_static_consumer_protocol_member_replaced_by_classic_member_when_target_is_missing_or_stale(case):
    """testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMemberWhenTargetAssignmentIsMissing /
    testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMemberWhenTargetAssignmentIsStale (policy downgrade, group epoch 11, target still at 10): the classic member that just joined has no
    target ("missing"), or the target is behind the group epoch ("stale"); the static consumer-protocol member is
    replaced by a classic member with its instance id, the group is downgraded and, the targets not being
    usable as a settled assignment, the classic group starts a rebalance (PreparingRebalance)."""
    env = CgEnv(topics={"foo": 6, "bar": 2}, racks=True, **{"group.consumer.migration.policy": "downgrade"})
    env.assignor.prepare({})  # NoOpPartitionAssignor
    if case == "missing":
        p1 = (("range", sub(["foo", "bar"])),)
        m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=["foo", "bar"],
               server_assignor_name="range", rebalance_timeout_ms=45000,
               classic_member_metadata=classic_member_metadata(5000, p1), assigned_partitions={})
        old2 = M("old2", instance_id="instance-id", state=S, member_epoch=10, previous_member_epoch=9,
                 subscribed_topic_names=["foo", "bar"], server_assignor_name="range", rebalance_timeout_ms=45000,
                 assigned_partitions=ep(10, foo=range(6), bar=[0, 1]))
        targets = {"old2": asg(foo=range(6), bar=[0, 1])}
    else:
        p1 = (("range", sub(["foo", "bar"], [("foo", [0, 1, 2]), ("bar", [0, 1])])),)
        m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
               server_assignor_name="range", rebalance_timeout_ms=45000,
               classic_member_metadata=classic_member_metadata(5000, p1),
               assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
        old2 = M("old2", instance_id="instance-id", state=S, member_epoch=10, previous_member_epoch=9,
                 subscribed_topic_names=["foo", "bar"], server_assignor_name="range", rebalance_timeout_ms=45000,
                 assigned_partitions=ep(10, foo=[3, 4, 5]))
        targets = {"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "old2": asg(foo=[3, 4, 5])}
    env.build_group(GID, 11, members=[m1, old2], assignments=targets, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo", "bar"))
    classic_join(env, GID, "", [("range", sub(["foo", "bar"]))], instance_id="instance-id")
    assert env.group(GID) is None and str(env.svc.group(GID).state) == "PreparingRebalance"
    members = env.svc.group(GID).members
    assert "m1" in members and "old2" not in members and len(members) == 2


@pytest.mark.parametrize("case", ["same", "changed"])
def test_consumer_member_with_regex_replaced_by_classic_member(case):
    """testConsumerMemberWithRegexReplacedByClassicMemberWithSameSubscription / ...WithChangedSubscription: a static
    member subscribed by regex (``bar*`` beside the name foo, or ``foo*`` alone) is replaced by a classic member
    (same instance id) subscribing to foo (same) or to nothing (changed): the copy keeps the regex, the update
    clears it (``""``), the unused regex is tombstoned, the epoch is bumped and new targets are computed (the mock
    assignor gives everyone nothing)."""
    G = "fooup"
    same = case == "same"
    env = CgEnv(topics={"foo": 6, "bar": 1} if same else {"foo": 6})
    env.assignor.prepare({})
    common = dict(state=S, member_epoch=10, previous_member_epoch=10, rebalance_timeout_ms=5000,
                  server_assignor_name="range")
    regex, names = ("bar*", ["foo"]) if same else ("foo*", [])
    owned = dict(foo=[0, 1, 2], bar=[0]) if same else dict(foo=[0, 1, 2])
    m1 = M("m1", instance_id="instance-id", subscribed_topic_regex=regex, subscribed_topic_names=names,
           assigned_partitions=ep(10, **owned), **common)
    m2 = M("m2", subscribed_topic_names=["foo"], assigned_partitions=ep(10, foo=[3, 4, 5]), **common)
    env.build_group(G, 10, members=[m1, m2], assignments={"m1": asg(**owned), "m2": asg(foo=[3, 4, 5])},
                    assignment_epoch=10, regexes={regex: (["bar"] if same else ["foo"], 0, 0)})
    protocols = [("range", sub(["foo"] if same else []))]
    r = classic_join(env, G, "", protocols, instance_id="instance-id", session_timeout_ms=500,
                     rebalance_timeout_ms=5000)
    new_id = env.group(G).static_member_id("instance-id")
    assert new_id not in (None, "m1") and r.member_id == new_id
    copied = M(new_id, instance_id="instance-id", subscribed_topic_regex=regex, subscribed_topic_names=names,
               assigned_partitions=ep(10, **owned), **{**common, "member_epoch": 0, "previous_member_epoch": 0})
    updated = M(new_id, instance_id="instance-id", subscribed_topic_regex="", subscribed_topic_names=names,
                assigned_partitions={}, classic_member_metadata=classic_member_metadata(500, protocols),
                **{**common, "member_epoch": 11, "previous_member_epoch": 0})
    assert_unordered_records([
        [R.ConsumerGroupCurrentMemberAssignmentTombstone(G, member_id="m1")],
        [R.ConsumerGroupTargetAssignmentMemberTombstone(G, member_id="m1")],
        [R.ConsumerGroupMemberMetadataTombstone(G, member_id="m1")],
        [member_metadata_record(G, copied)],
        [target_assignment_record(G, new_id, asg(**owned))],
        [current_assignment_record(G, copied)],
        [member_metadata_record(G, updated)],
        [R.ConsumerGroupRegularExpressionTombstone(G, regular_expression=regex)],
        [R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo"))],
        [target_assignment_record(G, new_id, {}), target_assignment_record(G, "m2", {})],
        [R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=env.now)],
        [current_assignment_record(G, updated)]], durable(env.last_records))


def test_consumer_group_member_using_classic_protocol_batch_leave_group_updating_subscription_metadata():
    """testConsumerGroupMemberUsingClassicProtocolBatchLeaveGroupUpdatingSubscriptionMetadata: the classic member,
    the only one subscribed to bar, leaves by a batch LeaveGroup: its tombstones, then the epoch bump with the
    metadata hash over foo only (the group's subscribed topics shrank). The group stays a consumer group (policy
    bidirectional, but a consumer-protocol member remains)."""
    env = CgEnv(topics={"foo": 2, "bar": 1}, racks=True)
    p = (("range", sub(["foo", "bar"], [("foo", [0])])),)
    common = dict(state=S, member_epoch=10, previous_member_epoch=9, server_assignor_name="range",
                  rebalance_timeout_ms=45000, client_id="", client_host="")
    m1 = M("m1", subscribed_topic_names=["foo", "bar"], classic_member_metadata=classic_member_metadata(5000, p),
           assigned_partitions=ep(11, foo=[0]), **common)
    m2 = M("m2", subscribed_topic_names=["foo"], assigned_partitions=ep(10, bar=[0]), **common)
    env.build_group(GID, 10, members=[m1, m2], assignments={"m1": asg(foo=[0]), "m2": asg(bar=[0])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    r = classic_leave(env, GID, [("m1", None)])
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [("m1", None, 0)]
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="m1"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="m1"),
                    R.ConsumerGroupMemberMetadataTombstone(GID, member_id="m1"),
                    R.ConsumerGroupMetadata(GID, epoch=11, metadata_hash=env.metadata_hash("foo"))],
                   durable(env.last_records))
    assert env.group(GID) is not None


def test_consumer_group_heartbeat_from_existing_classic_static_member():
    """testConsumerGroupHeartbeatFromExistingClassicStaticMember: a static member of a consumer group using the
    classic protocol restarts with the consumer protocol, heartbeating epoch 0 with its own member id and instance
    id: it replaces itself (its tombstones, the copy at epoch 0 keeping its partitions and classic metadata), then
    rejoins at epoch 10 with its new rebalance timeout and no classic metadata; its member id is kept; session 45 s."""
    env = CgEnv(topics={"foo": 6, "bar": 3}, racks=True, **{"group.consumer.migration.policy": "upgrade"})
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])})  # no-op
    protocols = (("range", sub(["foo", "bar"], [("foo", [0, 1, 2]), ("bar", [0, 1])])),)
    common = dict(state=S, member_epoch=10, previous_member_epoch=9, subscribed_topic_names=["foo", "bar"],
                  server_assignor_name="range", rebalance_timeout_ms=45000)
    m1 = M("m1", instance_id="instance-id-1", classic_member_metadata=classic_member_metadata(5000, protocols),
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]), **common)
    m2 = M("m2", instance_id="instance-id-2", assigned_partitions=ep(10, foo=[3, 4, 5], bar=[2]), **common)
    env.build_group(GID, 10, members=[m1, m2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    r = env.heartbeat(GID, "m1", 0, instance_id="instance-id-1", rebalance_timeout_ms=5000, assignor="range",
                      names=["foo", "bar"], owned={})
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m1", 10)
    replacing = m1.replace(member_epoch=0, previous_member_epoch=0)
    final = replacing.replace(member_epoch=10, rebalance_timeout_ms=5000, classic_member_metadata=None)
    assert_records([R.ConsumerGroupCurrentMemberAssignmentTombstone(GID, member_id="m1"),
                    R.ConsumerGroupTargetAssignmentMemberTombstone(GID, member_id="m1"),
                    R.ConsumerGroupMemberMetadataTombstone(GID, member_id="m1"),
                    member_metadata_record(GID, replacing),
                    target_assignment_record(GID, "m1", asg(foo=[0, 1, 2], bar=[0, 1])),
                    current_assignment_record(GID, replacing),
                    member_metadata_record(GID, final),
                    current_assignment_record(GID, final)], durable(env.last_records))
    assert env.timers()[f"session-timeout-{GID}-m1"] == env.now + 45000

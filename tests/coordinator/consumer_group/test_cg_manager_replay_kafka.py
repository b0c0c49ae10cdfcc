"""Replaying ConsumerGroup* records on the coordinator: Kafka 4.4's ``GroupMetadataManagerTest`` ``testReplay*``
cases for consumer groups (each names its Kafka test). Records go into the shard's log as Kafka's tests
``context.replay(...)`` them (harness: cg_env, which also checks that the live state equals the log's replay).

Not ported: ``testReplayConsumerGroupPartitionMetadata`` (the pre-4.1 ConsumerGroupPartitionMetadata *value* is not
modelled: kgroup never writes it and no log of kgroup's holds one); its tombstone is (a no-op, below)."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import MemberState, current_assignment_record, member_metadata_record, \
    target_assignment_record
from coordinator.errors import ApiError

from cg_env import CgEnv
from test_cg_heartbeat_kafka import M, ep

FOO, BAR = CgEnv.tid("foo"), CgEnv.tid("bar")
S = MemberState.STABLE


def _unknown_member(env: CgEnv, group_id: str, member_id: str) -> None:
    with pytest.raises(ApiError) as e:
        env.group(group_id).get_or_create_member(member_id, False)
    assert e.value.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_replay_consumer_group_metadata():
    """testReplayConsumerGroupMetadata: the group is created if it does not exist."""
    env = CgEnv()
    env.replay(R.ConsumerGroupMetadata("foo", epoch=10, metadata_hash=0))
    assert env.group("foo").group_epoch == 10


def test_replay_consumer_group_metadata_tombstone():
    """testReplayConsumerGroupMetadataTombstone: no group, no-op."""
    env = CgEnv()
    env.replay(R.ConsumerGroupMetadataTombstone("foo"))
    assert env.group("foo") is None


def test_replay_consumer_group_member_metadata():
    """testReplayConsumerGroupMemberMetadata: the group and the member are created if they do not exist."""
    env = CgEnv()
    m = M("member", client_id="clientid", client_host="clienthost", server_assignor_name="range", rack_id="rackid",
          subscribed_topic_names=["foo"])
    env.replay(member_metadata_record("foo", m))
    assert env.group("foo").get_or_create_member("member", False) == m


@pytest.mark.parametrize("tombstone", [
    pytest.param(R.ConsumerGroupMemberMetadataTombstone, id="testReplayConsumerGroupMemberMetadataTombstone"),
    pytest.param(R.ConsumerGroupCurrentMemberAssignmentTombstone,
                 id="testReplayConsumerGroupCurrentMemberAssignmentTombstone"),
])
def test_replay_member_tombstone_of_unknown_member_or_group(tombstone):
    """testReplayConsumerGroupMemberMetadataTombstone / testReplayConsumerGroupCurrentMemberAssignmentTombstone:
    unknown member or unknown group: no-op."""
    env = CgEnv()
    env.replay(R.ConsumerGroupMetadata("foo", epoch=10, metadata_hash=0))
    env.replay(tombstone("foo", member_id="m1"))
    _unknown_member(env, "foo", "m1")
    env.replay(tombstone("bar", member_id="m1"))
    assert env.group("bar") is None


def test_replay_consumer_group_partition_metadata_tombstone():
    """testReplayConsumerGroupPartitionMetadataTombstone / ...WithExistentGroup: a no-op with or without the
    group."""
    env = CgEnv()
    env.replay(R.ConsumerGroupPartitionMetadataTombstone("foo"))
    assert env.group("foo") is None
    env.build_group("foo", 10)
    before = env.group("foo").snapshot()
    env.replay(R.ConsumerGroupPartitionMetadataTombstone("foo"))
    assert env.group("foo").snapshot() == before


def test_replay_consumer_group_target_assignment_member():
    """testReplayConsumerGroupTargetAssignmentMember: the group is created if it does not exist."""
    env = CgEnv()
    env.replay(target_assignment_record("foo", "m1", {FOO: [0, 1, 2]}))
    assert env.group("foo").target_assignment_of("m1").as_sets() == {FOO: frozenset({0, 1, 2})}


def test_replay_consumer_group_target_assignment_member_tombstone():
    """testReplayConsumerGroupTargetAssignmentMemberTombstone: no group, no-op."""
    env = CgEnv()
    env.replay(R.ConsumerGroupTargetAssignmentMemberTombstone("foo", member_id="m1"))
    assert env.group("foo") is None


def test_replay_consumer_group_target_assignment_metadata():
    """testReplayConsumerGroupTargetAssignmentMetadata: the group is created if it does not exist."""
    env = CgEnv()
    env.replay(R.ConsumerGroupTargetAssignmentMetadata("foo", assignment_epoch=10, assignment_timestamp_ms=12345))
    g = env.group("foo")
    assert (g.assignment_epoch, g.assignment_timestamp_ms) == (10, 12345)


def test_replay_consumer_group_target_assignment_metadata_tombstone():
    """testReplayConsumerGroupTargetAssignmentMetadataTombstone: no group, no-op."""
    env = CgEnv()
    env.replay(R.ConsumerGroupTargetAssignmentMetadataTombstone("foo"))
    assert env.group("foo") is None


def test_replay_consumer_group_target_assignment_metadata_tombstone_existing():
    """testReplayConsumerGroupTargetAssignmentMetadataTombstoneExisting: the tombstone resets the epoch to -1 and
    the timestamp to 0."""
    env = CgEnv()
    env.replay(R.ConsumerGroupTargetAssignmentMetadata("foo", assignment_epoch=10, assignment_timestamp_ms=12345))
    env.replay(R.ConsumerGroupTargetAssignmentMetadataTombstone("foo"))
    g = env.group("foo")
    assert (g.assignment_epoch, g.assignment_timestamp_ms) == (-1, 0)


def test_replay_consumer_group_current_member_assignment():
    """testReplayConsumerGroupCurrentMemberAssignment: the group and the member are created if they do not
    exist."""
    env = CgEnv()
    m = M("member", client_id="", client_host="", member_epoch=10, previous_member_epoch=9,
          state=MemberState.UNRELEASED_PARTITIONS, assigned_partitions=ep(10, foo=[0, 1, 2]))
    env.replay(current_assignment_record("bar", m))
    assert env.group("bar").get_or_create_member("member", False) == m


def _assignment(member_id: str, epoch: int, previous: int, **topics) -> R.Record:
    return current_assignment_record("fooup", M(member_id, state=S, member_epoch=epoch, previous_member_epoch=previous,
                                                assigned_partitions=ep(epoch, **topics) if topics else {}))


def test_replay_consumer_group_current_member_assignment_with_compaction():
    """testReplayConsumerGroupCurrentMemberAssignmentWithCompaction: A's release of foo-0 was compacted away; B
    took foo-0 at epoch 12; A's next assignment (foo-1) leaves foo-0 with B."""
    env = CgEnv()
    env.replay(_assignment("memberIdA", 11, 10, foo=[0]))
    env.replay(_assignment("memberIdB", 12, 11, foo=[0]))
    env.replay(_assignment("memberIdA", 13, 12, foo=[1]))
    g = env.group("fooup")
    assert (g.current_partition_epoch(FOO, 0), g.current_partition_epoch(FOO, 1)) == (12, 13)


def test_replay_consumer_group_current_member_assignment_unowned_topic_with_compaction():
    """testReplayConsumerGroupCurrentMemberAssignmentUnownedTopicWithCompaction: removing A's compacted-away
    ownership of an unowned partition is allowed."""
    env = CgEnv()
    env.replay(_assignment("memberIdA", 11, 10, foo=[0]))
    env.replay(current_assignment_record("fooup", M("memberIdB", state=S, member_epoch=12, previous_member_epoch=11,
                                                    assigned_partitions=ep(11, foo=[0]))))
    env.replay(_assignment("memberIdB", 13, 12))
    env.replay(_assignment("memberIdA", 14, 13, bar=[0]))
    g = env.group("fooup")
    assert (g.current_partition_epoch(FOO, 0), g.current_partition_epoch(BAR, 0)) == (-1, 14)

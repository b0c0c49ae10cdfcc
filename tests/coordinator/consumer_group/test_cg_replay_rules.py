"""Kafka's replay rules for the ConsumerGroup* records (``GroupMetadataManager.replay``, 4.4): order checks with
Kafka's IllegalStateException messages, tombstones for unknown groups or members ignored, value records creating
the group, a group deletion batch, and a refused record changing nothing."""

from __future__ import annotations

import pytest

from coordinator import records as R
from coordinator.consumer_group import (ConsumerGroup, ConsumerGroups, ConsumerGroupState,
                                        current_assignment_record, group_tombstone_records, member_metadata_record)
from coordinator.errors import IllegalStateError

from cg_helpers import member, mk_assignment, tid, update_member, update_target_assignment, with_epochs

FOO = tid("foo")


def _group() -> ConsumerGroup:
    g = ConsumerGroup("g")
    update_member(g, member("m", member_epoch=2, assigned_partitions=with_epochs(mk_assignment((FOO, 0)), 2)))
    update_target_assignment(g, "m", mk_assignment((FOO, 0)))
    return g


def _refused(g: ConsumerGroup, rec: R.Record, message: str) -> None:
    before = g.snapshot()
    with pytest.raises(IllegalStateError) as e:
        g.replay(rec)
    assert str(e.value) == message
    assert g.snapshot() == before  # nothing changed


def test_member_tombstone_needs_the_assignment_tombstones_first():
    g = _group()
    _refused(g, R.ConsumerGroupMemberMetadataTombstone("g", member_id="m"),
             "Received a tombstone record to delete member m but did not receive "
             "ConsumerGroupCurrentMemberAssignmentValue tombstone.")
    g.replay(R.ConsumerGroupCurrentMemberAssignmentTombstone("g", member_id="m"))
    assert (g.members["m"].member_epoch, g.members["m"].previous_member_epoch) == (-1, -1)
    assert g.members["m"].assigned_partitions == {} and g.current_partition_epoch(FOO, 0) == -1
    # (Kafka's message names the target assignment *metadata* record here.)
    _refused(g, R.ConsumerGroupMemberMetadataTombstone("g", member_id="m"),
             "Received a tombstone record to delete member m but did not receive "
             "ConsumerGroupTargetAssignmentMetadataValue tombstone.")
    g.replay(R.ConsumerGroupTargetAssignmentMemberTombstone("g", member_id="m"))
    g.replay(R.ConsumerGroupMemberMetadataTombstone("g", member_id="m"))
    assert not g.has_member("m") and g.state == ConsumerGroupState.EMPTY


def test_target_assignment_metadata_tombstone_needs_an_empty_target():
    g = _group()
    _refused(g, R.ConsumerGroupTargetAssignmentMetadataTombstone("g"),
             "Received a tombstone record to delete target assignment of g but the assignment still has 1 members.")
    _refused(g, R.ConsumerGroupTargetAssignmentMetadata("g", assignment_epoch=-2),
             "The assignment epoch must be non-negative or -1.")
    _refused(g, R.ConsumerGroupTargetAssignmentMetadata("g", assignment_epoch=3, assignment_timestamp_ms=-1),
             "The assignment timestamp must be non-negative.")


def test_group_tombstone_needs_an_emptied_group():
    g = _group()
    _refused(g, R.ConsumerGroupMetadataTombstone("g"),
             "Received a tombstone record to delete group g but the group still has 1 members.")
    g.replay(R.ConsumerGroupMemberMetadataTombstone("g", member_id="zzz"))  # an unknown member: ignored
    assert g.has_member("m")
    g2 = ConsumerGroup("g")
    update_target_assignment(g2, "gone", mk_assignment((FOO, 1)))
    _refused(g2, R.ConsumerGroupMetadataTombstone("g"),
             "Received a tombstone record to delete group g but the target assignment still has 1 members.")
    g3 = ConsumerGroup("g")
    _refused(g3, R.ConsumerGroupMetadataTombstone("g"),
             "Received a tombstone record to delete group g but did not receive "
             "ConsumerGroupTargetAssignmentMetadataValue tombstone.")


def test_group_deletion_batch_removes_the_group():
    groups = ConsumerGroups()
    for rec in [member_metadata_record("g", member("a", subscribed_topic_regex="x.*")),
                current_assignment_record("g", member("a", member_epoch=1)),
                R.ConsumerGroupRegularExpression("g", regular_expression="x.*", topics=("x1",), version=3,
                                                 timestamp_ms=5)]:
        groups.replay(rec)
    g = groups.get("g")
    assert g.subscribed_topic_names["x1"].by_regex_count == 1
    # createGroupTombstoneRecords (deletion, or conversion to a classic group): members' tombstones in replay
    # order, then the group's.
    for rec in group_tombstone_records(g):
        groups.replay(rec)
    assert "g" not in groups and g.state == ConsumerGroupState.DEAD
    with pytest.raises(IllegalStateError):
        g.replay(R.ConsumerGroupMetadata("g", epoch=3))  # a deleted group object takes no more records


def test_value_records_create_the_group_and_tombstones_of_unknown_groups_are_ignored():
    groups = ConsumerGroups()
    for rec in (R.ConsumerGroupMetadataTombstone("x"), R.ConsumerGroupMemberMetadataTombstone("x", member_id="m"),
                R.ConsumerGroupCurrentMemberAssignmentTombstone("x", member_id="m"),
                R.ConsumerGroupTargetAssignmentMemberTombstone("x", member_id="m"),
                R.ConsumerGroupTargetAssignmentMetadataTombstone("x"), R.ConsumerGroupPartitionMetadataTombstone("x"),
                R.ConsumerGroupRegularExpressionTombstone("x", regular_expression="r"),
                R.OffsetCommit("x", topic="foo"), R.GroupTombstone("x")):  # not ours: skipped
        groups.replay(rec)
    assert len(groups) == 0
    # A current assignment for an unknown group creates the group and the member.
    groups.replay(current_assignment_record("y", member("m", member_epoch=1)))
    assert groups.get("y").members["m"].member_epoch == 1
    groups.replay(R.ConsumerGroupTargetAssignmentMetadata("z", assignment_epoch=4, assignment_timestamp_ms=9))
    z = groups.get("z")
    assert (z.group_epoch, z.assignment_epoch, z.assignment_timestamp_ms) == (1, 4, 9)
    # A refused value record does not leave a half-created group behind.
    with pytest.raises(IllegalStateError):
        groups.replay(R.ConsumerGroupTargetAssignmentMetadata("w", assignment_epoch=-5))
    assert "w" not in groups


def test_a_group_replays_only_its_own_consumer_group_records():
    g = ConsumerGroup("g")
    with pytest.raises(ValueError):
        g.replay(R.ConsumerGroupMetadata("other", epoch=2))
    with pytest.raises(TypeError):
        g.replay(R.OffsetCommit("g", topic="foo"))


def test_new_groups_start_at_epoch_one():
    """KAFKA-20268 (4.3+): group epoch 1 and target assignment epoch 1 (an empty assignment); Empty."""
    g = ConsumerGroup("g")
    assert (g.group_epoch, g.assignment_epoch, g.assignment_timestamp_ms, g.state) == (1, 1, 0,
                                                                                       ConsumerGroupState.EMPTY)

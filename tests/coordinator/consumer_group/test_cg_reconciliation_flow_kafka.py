"""The reconciliation flow over heartbeats, full vs incremental responses, group size and states: Kafka 4.4's
``GroupMetadataManagerTest`` cases ported with Kafka's expected values (each names its Kafka test). Harness: cg_env."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.assignors import PartitionAssignorError
from coordinator.consumer_group import ConsumerGroupState, MemberState, current_assignment_record, \
    member_metadata_record, target_assignment_record

from cg_env import CgEnv, assert_records, assignment_of
from test_cg_heartbeat_kafka import BAR, FOO, G, M, asg, ep

E = ErrorCode
S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS
GS = ConsumerGroupState


def test_consumer_group_heartbeat_full_response():
    """testConsumerGroupHeartbeatFullResponse: the assignment is sent on a join, on a full request (names or regex,
    rebalance timeout, owned partitions), and when it changed -- not on an incremental heartbeat."""
    env = CgEnv(topics={"foo": 2}, racks=True)
    env.assignor.prepare({"m": asg(foo=[0, 1])})
    full = dict(rebalance_timeout_ms=5000, assignor="range", owned={})
    r = env.heartbeat(G, "m", 0, names=["foo", "bar"], **full)
    assert (r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == (2, 5000, {FOO: [0, 1]})
    r = env.heartbeat(G, "m", 2)
    assert (r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (2, 5000, None)
    r = env.heartbeat(G, "m", 2, names=["foo", "bar"], **full)
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1]})
    r = env.heartbeat(G, "m", 2, regex="foo.*", **full)
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1]})


def test_reconciliation_process():
    """testReconciliationProcess: a third member joins; revocations before assignments, unreleased partitions
    withheld until their owners revoke them, each partition's assignment epoch kept (4.4)."""
    env = CgEnv(racks=True)
    m1 = M("m1", state=S, member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
           assigned_partitions=ep(10, foo=[0, 1, 2], bar=[0, 1]))
    m2 = M("m2", state=S, member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
           assigned_partitions=ep(10, foo=[3, 4, 5], bar=[2]))
    env.build_group(G, 10, members=[m1, m2],
                    assignments={"m1": asg(foo=[0, 1, 2], bar=[0, 1]), "m2": asg(foo=[3, 4, 5], bar=[2])},
                    assignment_epoch=10, metadata_hash=env.metadata_hash("foo", "bar"))
    env.assignor.prepare({"m1": asg(foo=[0, 1], bar=[0]), "m2": asg(foo=[2, 3], bar=[2]),
                          "m3": asg(foo=[4, 5], bar=[1])})
    state = lambda m: env.member(G, m).state  # noqa: E731
    assert (state("m1"), state("m2"), env.group(G).state) == (S, S, GS.STABLE)

    def current(mid, st, epoch, prev, assigned=None, pending=None):
        return current_assignment_record(G, M(mid, state=st, member_epoch=epoch, previous_member_epoch=prev,
                                              assigned_partitions=assigned or {},
                                              partitions_pending_revocation=pending or {}))

    # m3 joins: a new target at epoch 11; m3 gets nothing yet (all owned by others): UNRELEASED_PARTITIONS.
    r = env.heartbeat(G, "m3", 0, rebalance_timeout_ms=5000, names=["foo", "bar"], assignor="range", owned={})
    assert (r.member_epoch, assignment_of(r)) == (11, {})
    assert env.last_records[-1] == current("m3", UNREL, 11, 0)
    assert (state("m3"), env.group(G).state) == (UNREL, GS.RECONCILING)
    # m1: stays at 10, must revoke foo-2 and bar-1.
    r = env.heartbeat(G, "m1", 10)
    assert (r.member_epoch, assignment_of(r)) == (10, {FOO: [0, 1], BAR: [0]})
    assert_records([current("m1", UNREV, 10, 10, ep(10, foo=[0, 1], bar=[0]), ep(10, foo=[2], bar=[1]))],
                   env.last_records)
    # m2: stays at 10, must revoke foo-4, foo-5.
    r = env.heartbeat(G, "m2", 10)
    assert (r.member_epoch, assignment_of(r)) == (10, {FOO: [3], BAR: [2]})
    assert_records([current("m2", UNREV, 10, 10, ep(10, foo=[3], bar=[2]), ep(10, foo=[4, 5]))], env.last_records)
    # m3: still waiting (previous epoch := 11).
    r = env.heartbeat(G, "m3", 11)
    assert (r.member_epoch, r.assignment) == (11, None)
    assert_records([current("m3", UNREL, 11, 11)], env.last_records)
    # m1 acknowledges the revocation: epoch 11, STABLE.
    r = env.heartbeat(G, "m1", 10, owned={FOO: [0, 1], BAR: [0]})
    assert (r.member_epoch, r.assignment) == (11, None)
    assert_records([current("m1", S, 11, 10, ep(10, foo=[0, 1], bar=[0]))], env.last_records)
    assert (state("m1"), env.group(G).state) == (S, GS.RECONCILING)
    # m2 heartbeats without acknowledging: nothing changes.
    r = env.heartbeat(G, "m2", 10)
    assert (r.member_epoch, r.assignment, env.last_records) == (10, None, [])
    assert state("m2") == UNREV
    # m3 gets bar-1 (released by m1), still waits for foo-4, foo-5.
    r = env.heartbeat(G, "m3", 11)
    assert (r.member_epoch, assignment_of(r)) == (11, {BAR: [1]})
    assert_records([current("m3", UNREL, 11, 11, ep(11, bar=[1]))], env.last_records)
    r = env.heartbeat(G, "m3", 11)
    assert (r.member_epoch, r.assignment, env.last_records) == (11, None, [])
    # m2 acknowledges: epoch 11, foo-2 newly assigned at 11, foo-3 and bar-2 kept at 10.
    r = env.heartbeat(G, "m2", 10, owned={FOO: [3], BAR: [2]})
    assert (r.member_epoch, assignment_of(r)) == (11, {FOO: [2, 3], BAR: [2]})
    assert_records([current("m2", S, 11, 10, {FOO: {2: 11, 3: 10}, BAR: {2: 10}})], env.last_records)
    assert (state("m2"), env.group(G).state) == (S, GS.RECONCILING)
    # m3 acknowledges its assignment: everything, STABLE; the group is STABLE.
    r = env.heartbeat(G, "m3", 11, owned={BAR: [1]})
    assert (r.member_epoch, assignment_of(r)) == (11, {FOO: [4, 5], BAR: [1]})
    assert_records([current("m3", S, 11, 11, ep(11, foo=[4, 5], bar=[1]))], env.last_records)
    assert (state("m3"), env.group(G).state) == (S, GS.STABLE)


def test_new_member_is_rejected_with_maximum_members_is_reached():
    """testNewMemberIsRejectedWithMaximumMembersIsReached."""
    env = CgEnv(**{"group.consumer.max.size": 2})
    ms = [M(m, state=S, member_epoch=10, previous_member_epoch=9, rebalance_timeout_ms=5000,
            subscribed_topic_names=["foo", "bar"], server_assignor_name="range") for m in ("m1", "m2")]
    env.build_group(G, 10, members=ms, assignment_epoch=10)
    code, msg = env.heartbeat_error(G, "m3", 0, assignor="range", rebalance_timeout_ms=5000,
                                    names=["foo", "bar"], owned={})
    assert (code, msg) == (E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 2 "
                                                     "members.")


def _full_group(env: CgEnv, member_epoch: int) -> None:
    old = M("old-member-id", state=S, instance_id="instance-id", member_epoch=member_epoch, previous_member_epoch=9,
            rebalance_timeout_ms=5000, subscribed_topic_names=["foo", "bar"], server_assignor_name="range",
            assigned_partitions=ep(10, foo=[0]))
    env.build_group(G, 10, members=[old], assignments={"old-member-id": asg(foo=[0])}, assignment_epoch=10,
                    metadata_hash=env.metadata_hash("foo"))


def test_static_member_can_rejoin_when_consumer_group_is_full():
    """testStaticMemberCanRejoinWhenConsumerGroupIsFull (KAFKA-20601)."""
    env = CgEnv(topics={"foo": 1}, **{"group.consumer.max.size": 1})
    env.assignor.prepare({"new-member-id": asg(foo=[0])})
    _full_group(env, -2)
    r = env.heartbeat(G, "new-member-id", 0, instance_id="instance-id", assignor="range", rebalance_timeout_ms=5000,
                      names=["foo"], owned={})
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, assignment_of(r)) == \
        ("new-member-id", 11, 5000, {FOO: [0]})


@pytest.mark.parametrize("instance_id,error", [
    pytest.param("instance-id", E.UNRELEASED_INSTANCE_ID,
                 id="testStaticMemberRejoinWithUnreleasedInstanceIdFailsWhenConsumerGroupIsFull"),
    pytest.param("other-instance-id", E.GROUP_MAX_SIZE_REACHED,
                 id="testNewStaticMemberIsRejectedWhenConsumerGroupIsFull"),
])
def test_static_member_join_when_consumer_group_is_full(instance_id, error):
    """testStaticMemberRejoinWithUnreleasedInstanceIdFailsWhenConsumerGroupIsFull (the instance's member has not
    left: UNRELEASED_INSTANCE_ID, the size check skipped) / testNewStaticMemberIsRejectedWhenConsumerGroupIsFull
    (another instance: GROUP_MAX_SIZE_REACHED)."""
    env = CgEnv(topics={"foo": 1}, **{"group.consumer.max.size": 1})
    env.assignor.prepare({"old-member-id": asg(foo=[0])})
    _full_group(env, 10)
    code, _ = env.heartbeat_error(G, "new-member-id", 0, instance_id=instance_id, assignor="range",
                                  rebalance_timeout_ms=5000, names=["foo"], owned={})
    assert code == error


def test_consumer_group_states():
    """testConsumerGroupStates: EMPTY -> ASSIGNING -> RECONCILING -> STABLE, derived from the records."""
    env = CgEnv(topics={"foo": 6})
    env.build_group(G, 10)
    assert env.group(G).state == GS.EMPTY
    env.replay(member_metadata_record(G, M("m1", state=S, subscribed_topic_names=["foo"])))
    env.replay(R.ConsumerGroupMetadata(G, epoch=11, metadata_hash=env.metadata_hash("foo")))
    assert env.group(G).state == GS.ASSIGNING
    env.replay(target_assignment_record(G, "m1", asg(foo=[1, 2, 3])),
               R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=11, assignment_timestamp_ms=12345))
    assert env.group(G).state == GS.RECONCILING
    env.replay(current_assignment_record(G, M("m1", state=UNREV, member_epoch=11, previous_member_epoch=10,
                                              assigned_partitions=ep(11, foo=[1, 2]),
                                              partitions_pending_revocation=ep(11, foo=[3]))))
    assert env.group(G).state == GS.RECONCILING
    env.replay(current_assignment_record(G, M("m1", state=S, member_epoch=11, previous_member_epoch=10,
                                              assigned_partitions=ep(11, foo=[1, 2, 3]))))
    assert env.group(G).state == GS.STABLE


def test_partition_assignor_exception_on_regular_heartbeat():
    """testPartitionAssignorExceptionOnRegularHeartbeat: UNKNOWN_SERVER_ERROR, no message (ApiError.fromThrowable
    drops it), nothing written."""
    env = CgEnv(racks=True)
    env.assignor.error = PartitionAssignorError("Assignment failed.")
    code, msg = env.heartbeat_error(G, "m1", 0, rebalance_timeout_ms=5000, names=["foo", "bar"], assignor="range",
                                    owned={})
    assert (code, msg) == (E.UNKNOWN_SERVER_ERROR, None)
    assert env.group(G) is None


@pytest.mark.parametrize("ts,interval,now,ok", [
    (0, 1000, 0, True),  # testCanComputeNextTargetAssignmentWithNoPreviousAssignmentTimestamp
    # testCanComputeNextTargetAssignmentWithZeroAssignmentIntervalMs
    (1000000, 0, 0, True), (1000000, 0, 999999, True), (1000000, 0, 1000000, True),
    # testCanComputeNextTargetAssignment
    (1000000, 5000, 0, False), (1000000, 5000, 999999, False), (1000000, 5000, 1000000, False),
    (1000000, 5000, 1004999, False), (1000000, 5000, 1005000, True), (1000000, 5000, 1007500, True),
])
def test_can_compute_next_target_assignment(ts, interval, now, ok):
    """testCanComputeNextTargetAssignment*: KIP-1263's rule."""
    from coordinator.consumer_manager import ConsumerGroupManager
    assert ConsumerGroupManager.can_compute_next_target_assignment(ts, interval, now) is ok


def test_consumer_group_assignment_interval():
    """testConsumerGroupAssignmentInterval (KIP-1263, group.consumer.assignment.interval.ms = 5000): a second join
    4995 ms after the first computation bumps the epoch but waits; the next heartbeat after the interval computes."""
    env = CgEnv(topics={"foo": 6}, **{"group.consumer.assignment.interval.ms": 5000})
    env.assignor.prepare({"m1": asg(foo=range(6))})
    r = env.heartbeat(G, "m1", 0, rebalance_timeout_ms=5000, assignor="range", names=["foo"], owned={})
    assert (r.member_epoch, assignment_of(r)) == (2, {FOO: [0, 1, 2, 3, 4, 5]})
    m1 = M("m1", state=S, member_epoch=2, previous_member_epoch=0, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range", assigned_partitions=ep(2, foo=range(6)))
    assert_records([member_metadata_record(G, m1),
                    R.ConsumerGroupMetadata(G, epoch=2, metadata_hash=env.metadata_hash("foo")),
                    target_assignment_record(G, "m1", asg(foo=range(6))),
                    R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=2, assignment_timestamp_ms=1000),
                    current_assignment_record(G, m1)], env.last_records)

    env.advance(4995)
    env.assignor.prepare({"m1": asg(foo=[0, 1, 2]), "m2": asg(foo=[3, 4, 5])})
    r = env.heartbeat(G, "m2", 0, rebalance_timeout_ms=5000, assignor="range", names=["foo"], owned={})
    assert (r.member_epoch, assignment_of(r)) == (2, {})
    m2 = M("m2", state=S, member_epoch=2, previous_member_epoch=0, rebalance_timeout_ms=5000,
           subscribed_topic_names=["foo"], server_assignor_name="range")
    assert_records([member_metadata_record(G, m2),
                    R.ConsumerGroupMetadata(G, epoch=3, metadata_hash=env.metadata_hash("foo")),
                    current_assignment_record(G, m2)], env.last_records)
    assert env.group(G).state == ConsumerGroupState.ASSIGNING

    env.advance(10)
    r = env.heartbeat(G, "m2", 2)
    assert (r.member_epoch, r.assignment) == (3, None)
    m2b = M("m2", state=UNREL, member_epoch=3, previous_member_epoch=2)
    from cg_env import assert_unordered_records
    assert_unordered_records([
        [target_assignment_record(G, "m1", asg(foo=[0, 1, 2])), target_assignment_record(G, "m2", asg(foo=[3, 4, 5]))],
        [R.ConsumerGroupTargetAssignmentMetadata(G, assignment_epoch=3, assignment_timestamp_ms=6005)],
        [current_assignment_record(G, m2b)]], env.last_records)

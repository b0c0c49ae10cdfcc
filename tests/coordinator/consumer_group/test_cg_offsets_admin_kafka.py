"""Offsets, describe, list, delete and expiry of KIP-848 consumer groups on the whole coordinator: Kafka 4.4's
``OffsetMetadataManagerTest`` (consumer group part), ``GroupMetadataManagerTest`` (describe/list/delete) and
``GroupCoordinatorServiceTest`` (request validation, describe), ported with Kafka's expected values (each names its
Kafka test). Harness: cg_env (requests go through the service, as on the wire)."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatRequest, OffsetDeleteRequest

from coordinator import records as R
from coordinator.consumer_group import MemberState, member_metadata_record

from cg_env import CgEnv
from test_cg_heartbeat_kafka import M, asg, ep

E = ErrorCode
S = MemberState.STABLE


def group_with(env: CgEnv, *members, group_id: str = "foo") -> None:
    """``getOrMaybeCreatePersistedConsumerGroup("foo", true)`` + ``group.updateMember(...)``, as records."""
    env.build_group(group_id, 1, members=members)


# --- OffsetCommit ---------------------------------------------------------------------------------------------------

def test_consumer_group_offset_commit_with_unknown_member_id():
    """testConsumerGroupOffsetCommitWithUnknownMemberId."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("other", member_epoch=10))
    assert env.commit("foo", "member", 10, {("bar", 0): 100}) == {("bar", 0): E.UNKNOWN_MEMBER_ID}


def test_consumer_group_offset_commit_with_stale_member_epoch():
    """testConsumerGroupOffsetCommitWithStaleMemberEpoch: an older epoch for a partition the member does not own,
    and a newer epoch, are both STALE_MEMBER_EPOCH."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10))
    assert env.commit("foo", "member", 9, {("bar", 0): 100}) == {("bar", 0): E.STALE_MEMBER_EPOCH}
    assert env.commit("foo", "member", 11, {("bar", 0): 100}) == {("bar", 0): E.STALE_MEMBER_EPOCH}


def test_consumer_group_offset_commit_with_illegal_generation_id():
    """testConsumerGroupOffsetCommitWithIllegalGenerationId: a classic-protocol member gets ILLEGAL_GENERATION."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10,
                      classic_member_metadata=R.ClassicMemberMetadata()))
    assert env.commit("foo", "member", 9, {("bar", 0): 100}) == {("bar", 0): E.ILLEGAL_GENERATION}
    assert env.commit("foo", "member", 11, {("bar", 0): 100}) == {("bar", 0): E.ILLEGAL_GENERATION}


def test_consumer_group_offset_commit_resolves_topic_id():
    """testConsumerGroupOffsetCommitResolvesTopicId (KIP-1251, 4.4): an older epoch is accepted for a partition
    assigned at an epoch not newer than it."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10, assigned_partitions=ep(5, bar=[0])))
    assert env.commit("foo", "member", 3, {("bar", 0): 100}) == {("bar", 0): E.STALE_MEMBER_EPOCH}
    assert env.commit("foo", "member", 5, {("bar", 0): 100}) == {("bar", 0): E.NONE}
    assert env.svc.committed_offsets("foo")[("bar", 0)].offset == 100


def test_consumer_group_offset_commit_one_stale_partition_fails_the_request():
    """commitOffset: the first partition the validator refuses throws, so the whole request fails (every partition
    gets the error) and nothing is written."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10, assigned_partitions=ep(5, bar=[0, 1])))
    got = env.commit("foo", "member", 5, {("bar", 0): 100, ("bar", 1): 101, ("bar", 2): 102})
    assert got == {("bar", 0): E.STALE_MEMBER_EPOCH, ("bar", 1): E.STALE_MEMBER_EPOCH,
                   ("bar", 2): E.STALE_MEMBER_EPOCH}
    assert env.last_records == [] and env.svc.committed_offsets("foo") == {}


def test_consumer_group_offset_commit_from_admin_client():
    """testConsumerGroupOffsetCommitFromAdminClient: epoch -1 and no member id into an empty group."""
    env = CgEnv(topics={"bar": 3})
    group_with(env)
    assert env.commit("foo", "", -1, {("bar", 0): 100}) == {("bar", 0): E.NONE}
    assert env.last_records == [R.OffsetCommit("foo", topic="bar", partition=0, offset=100, leader_epoch=-1,
                                               metadata="", commit_timestamp_ms=1000, expire_timestamp_ms=-1)]


def test_consumer_group_offset_commit_by_admin_rejected_while_members():
    """ConsumerGroup.validateOffsetCommit: an admin commit (epoch -1) is refused while the group has members."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10))
    assert env.commit("foo", "", -1, {("bar", 0): 100}) == {("bar", 0): E.UNKNOWN_MEMBER_ID}


def test_consumer_group_offset_commit():
    """testConsumerGroupOffsetCommit."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10))
    assert env.commit("foo", "member", 10, {("bar", 0): 100}, metadata="metadata") == {("bar", 0): E.NONE}


def test_consumer_group_offset_commit_with_offset_metadata_too_large():
    """testConsumerGroupOffsetCommitWithOffsetMetadataTooLarge: that partition only."""
    env = CgEnv(topics={"bar": 3}, **{"offset.metadata.max.bytes": 5})
    group_with(env, M("member", member_epoch=10, previous_member_epoch=10))
    assert env.commit("foo", "member", 10, {("bar", 0): 100}, metadata="toolarge") == \
        {("bar", 0): E.OFFSET_METADATA_TOO_LARGE}


def test_offset_commit_below_v9_from_consumer_protocol_member():
    """ConsumerGroup.validateOffsetCommit: UNSUPPORTED_VERSION for OffsetCommit < v9 from a consumer-protocol member
    (a classic-protocol member of the same group may use any version)."""
    env = CgEnv(topics={"bar": 3})
    group_with(env, M("member", member_epoch=10), M("classic", member_epoch=10,
                                                     classic_member_metadata=R.ClassicMemberMetadata()))
    assert env.commit("foo", "member", 10, {("bar", 0): 1}, version=8) == {("bar", 0): E.UNSUPPORTED_VERSION}
    assert env.commit("foo", "classic", 10, {("bar", 0): 1}, version=8) == {("bar", 0): E.NONE}


def test_offset_commit_to_unknown_group():
    """OffsetMetadataManager.validateOffsetCommit: unknown group and epoch >= 0 -> GROUP_ID_NOT_FOUND (v9+)."""
    env = CgEnv(topics={"bar": 3})
    assert env.commit("nope", "member", 3, {("bar", 0): 1}) == {("bar", 0): E.GROUP_ID_NOT_FOUND}


# --- OffsetFetch ----------------------------------------------------------------------------------------------------

def test_consumer_group_offset_fetch_with_member_id_and_epoch():
    """testConsumerGroupOffsetFetchWithMemberIdAndEpoch."""
    env = CgEnv(topics={"foo": 3})
    group_with(env, M("member", member_epoch=0), group_id="group")
    assert env.commit("group", "member", 0, {("foo", 0): 100}) == {("foo", 0): E.NONE}
    g = env.fetch("group", "member", 0, {"foo": [0]})
    assert g.error_code == 0 and g.topics[0].partitions[0].committed_offset == 100
    g = env.fetch("group", "member", 0, None)
    assert g.error_code == 0 and [(t.name, [p.committed_offset for p in t.partitions]) for t in g.topics] == \
        [("foo", [100])]


def test_consumer_group_offset_fetch_from_admin_client():
    """testConsumerGroupOffsetFetchFromAdminClient: no member id, epoch -1."""
    env = CgEnv(topics={"foo": 3})
    group_with(env, M("member", member_epoch=0), group_id="group")
    env.commit("group", "member", 0, {("foo", 0): 100})
    assert env.fetch("group", None, -1, {"foo": [0]}).topics[0].partitions[0].committed_offset == 100


@pytest.mark.parametrize("member_id,epoch,classic,error", [
    ("", 0, False, E.UNKNOWN_MEMBER_ID),       # testConsumerGroupOffsetFetchWithUnknownMemberId
    ("member", 0, False, E.UNKNOWN_MEMBER_ID),
    ("member", 10, False, E.STALE_MEMBER_EPOCH),   # testConsumerGroupOffsetFetchWithStaleMemberEpoch
    ("member", 10, True, E.ILLEGAL_GENERATION),    # testConsumerGroupOffsetFetchWithIllegalGenerationId
])
def test_consumer_group_offset_fetch_validation(member_id, epoch, classic, error):
    env = CgEnv(topics={"foo": 3})
    if member_id == "member" and epoch == 10:
        group_with(env, M("member", member_epoch=0,
                          classic_member_metadata=R.ClassicMemberMetadata() if classic else None), group_id="group")
    else:
        group_with(env, group_id="group")
    assert env.fetch("group", member_id, epoch, {"foo": [0]}).error_code == error
    assert env.fetch("group", member_id, epoch, None).error_code == error


# --- OffsetDelete ---------------------------------------------------------------------------------------------------

def _offset_delete(env: CgEnv, group: str, topic: str, partition: int) -> ErrorCode:
    r = env.send(OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.Topic(
        name=topic, partitions=[OffsetDeleteRequest.Topic.Partition(partition_index=partition)])]), 0)
    assert r.error_code == 0, r
    return ErrorCode(r.topics[-1].partitions[0].error_code)


def test_consumer_group_offset_delete():
    """testConsumerGroupOffsetDelete."""
    env = CgEnv(topics={"bar": 3})
    group_with(env)
    env.commit("foo", "", -1, {("bar", 0): 100})
    assert _offset_delete(env, "foo", "bar", 0) == E.NONE
    assert env.svc.committed_offsets("foo") == {}


def test_consumer_group_offset_delete_with_errors():
    """testConsumerGroupOffsetDeleteWithErrors: a subscribed topic's offsets cannot be deleted."""
    env = CgEnv(topics={"bar": 3, "bar1": 1})
    group_with(env)
    env.commit("foo", "", -1, {("bar", 0): 100})
    env.replay(member_metadata_record("foo", M("member1", subscribed_topic_names=["bar"])))
    assert _offset_delete(env, "foo", "bar1", 0) == E.NONE
    assert _offset_delete(env, "foo", "bar", 0) == E.GROUP_SUBSCRIBED_TO_TOPIC


# --- ConsumerGroupDescribe, ListGroups, DescribeGroups, DeleteGroups ------------------------------------------------

def test_consumer_group_describe_no_errors():
    """testConsumerGroupDescribeNoErrors."""
    env = CgEnv(topics={})
    env.build_group("group-id-1", 10)
    m = M("member-id", subscribed_topic_names=["topicName"], server_assignor_name="assignorName")
    env.build_group("group-id-2", 10, members=[m])
    d1, d2 = env.describe("group-id-1", "group-id-2")
    assert (d1.error_code, d1.group_id, d1.group_state, d1.group_epoch, d1.assignment_epoch, d1.assignor_name,
            d1.members) == (0, "group-id-1", "Empty", 10, 1, "range", [])
    assert (d2.group_state, d2.group_epoch, d2.assignment_epoch, d2.assignor_name) == \
        ("Assigning", 10, 1, "assignorName")
    (mm,) = d2.members
    assert (mm.member_id, mm.member_epoch, mm.client_id, mm.client_host, mm.subscribed_topic_names,
            mm.subscribed_topic_regex, mm.member_type, mm.assignment.topic_partitions,
            mm.target_assignment.topic_partitions) == \
        ("member-id", 0, "client", "/127.0.0.1", ["topicName"], "", 1, [], [])


def test_consumer_group_describe_with_errors():
    """testConsumerGroupDescribeWithErrors + ``consumerGroup``'s messages; GroupCoordinatorService's
    INVALID_GROUP_ID for an empty id (testConsumerGroupDescribeInvalidGroupId)."""
    env = CgEnv()
    env.replay(R.GroupMetadata("classic", protocol_type=None, current_state_timestamp_ms=1000))
    d = env.describe("groupId", "classic", "")
    assert [(x.group_id, ErrorCode(x.error_code), x.error_message) for x in d] == [
        ("", E.INVALID_GROUP_ID, None),
        ("groupId", E.GROUP_ID_NOT_FOUND, "Group groupId not found."),
        ("classic", E.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")]


def test_consumer_group_describe_members_and_assignments():
    """asDescribedGroup / asConsumerGroupDescribeMember (4.4, KAFKA-20431): the assignment lists assigned and
    pending-revocation partitions; topics by id and name; v0 omits the member type."""
    env = CgEnv(topics={"foo": 6, "bar": 3})
    m = M("m", state=MemberState.UNREVOKED_PARTITIONS, member_epoch=10, previous_member_epoch=10,
          instance_id="i", rack_id="r", subscribed_topic_names=["foo", "bar"],
          assigned_partitions=ep(10, foo=[0, 1]), partitions_pending_revocation=ep(10, foo=[2], bar=[0]))
    env.build_group("g", 11, members=[m], assignments={"m": asg(foo=[0, 1])}, assignment_epoch=11)
    (d,) = env.describe("g")
    (mm,) = d.members
    got = {tp.topic_name: sorted(tp.partitions) for tp in mm.assignment.topic_partitions}
    assert got == {"foo": [0, 1, 2], "bar": [0]}
    assert {tp.topic_name: tp.partitions for tp in mm.target_assignment.topic_partitions} == {"foo": [0, 1]}
    assert (mm.instance_id, mm.rack_id, mm.member_epoch, d.group_state) == ("i", "r", 10, "Reconciling")


def test_list_groups():
    """testListGroups (consumer and classic groups): types and case-insensitive states filters."""
    env = CgEnv()
    env.build_group("consumer-group-id", 10)
    env.replay(R.GroupMetadata("classic-group-id", protocol_type="classic", generation_id=2, protocol_name="range",
                               current_state_timestamp_ms=1000))
    assert env.list_groups() == [("classic-group-id", "classic", "Empty", "classic"),
                                 ("consumer-group-id", "consumer", "Empty", "consumer")]
    assert env.list_groups(states=["empty"]) == env.list_groups()
    env.replay(member_metadata_record("consumer-group-id", M("m1", subscribed_topic_names=["foo"])),
               R.ConsumerGroupMetadata("consumer-group-id", epoch=11, metadata_hash=0))
    assert env.list_groups(states=["assigning"]) == [("consumer-group-id", "consumer", "Assigning", "consumer")]
    assert env.list_groups(types=["Consumer"]) == [("consumer-group-id", "consumer", "Assigning", "consumer")]
    assert env.list_groups(types=["classic"]) == [("classic-group-id", "classic", "Empty", "classic")]
    assert env.list_groups(types=["share"]) == []


def test_describe_groups_of_a_consumer_group():
    """GroupMetadataManager.describeGroups: a consumer group is not a classic group -> described as Kafka
    describes an unknown group below v6: NONE, state "Dead", no members."""
    env = CgEnv()
    env.build_group("cg", 10, members=[M("m", member_epoch=10)])
    from protocol.messages import DescribeGroupsRequest
    (d,) = env.send(DescribeGroupsRequest(groups=["cg"]), 5).groups
    assert (d.error_code, d.group_state, d.protocol_type, d.members) == (0, "Dead", "", [])


def test_consumer_group_delete():
    """testConsumerGroupDelete + GroupCoordinatorShard.deleteGroups: NON_EMPTY_GROUP while members; an empty group's
    offsets then the group's tombstones."""
    from protocol.messages import DeleteGroupsRequest
    env = CgEnv(topics={"bar": 3})
    env.build_group("group-id", 10, members=[M("m", member_epoch=10)])
    r = env.send(DeleteGroupsRequest(groups_names=["group-id"]), 2)
    assert r.results[0].error_code == E.NON_EMPTY_GROUP
    env.replay(R.ConsumerGroupCurrentMemberAssignmentTombstone("group-id", member_id="m"),
               R.ConsumerGroupTargetAssignmentMemberTombstone("group-id", member_id="m"),
               R.ConsumerGroupMemberMetadataTombstone("group-id", member_id="m"))
    env.commit("group-id", "", -1, {("bar", 0): 5})
    r = env.send(DeleteGroupsRequest(groups_names=["group-id"]), 2)
    assert r.results[0].error_code == 0
    assert env.last_records == [
        R.OffsetTombstone("group-id", topic="bar", partition=0, reason="DeleteGroups"),
        R.ConsumerGroupTargetAssignmentMetadataTombstone("group-id"),
        R.ConsumerGroupPartitionMetadataTombstone("group-id"), R.ConsumerGroupMetadataTombstone("group-id")]
    assert env.group("group-id") is None


def test_consumer_group_offsets_expire_and_empty_group_is_deleted():
    """cleanupGroupMetadata with ConsumerGroup.offsetExpirationCondition: offsets of unsubscribed topics expire
    retention after their commit (whatever the group's state); an empty group without offsets is deleted."""
    env = CgEnv(topics={"bar": 3, "foo": 3}, **{"offsets.retention.minutes": 1,
                                                "offsets.retention.check.interval.ms": 10_000})
    env.build_group("g", 10, members=[M("m", member_epoch=10, subscribed_topic_names=["foo"])])
    env.commit("g", "m", 10, {("foo", 0): 1, ("bar", 0): 2})
    env.advance(70_000)
    assert set(env.svc.committed_offsets("g")) == {("foo", 0)}  # bar expired, foo is subscribed
    env.replay(R.ConsumerGroupCurrentMemberAssignmentTombstone("g", member_id="m"),
               R.ConsumerGroupTargetAssignmentMemberTombstone("g", member_id="m"),
               R.ConsumerGroupMemberMetadataTombstone("g", member_id="m"))
    env.advance(70_000)
    assert env.svc.committed_offsets("g") == {} and env.group("g") is None


# --- ConsumerGroupHeartbeat request validation (GroupCoordinatorService) --------------------------------------------

Q = ConsumerGroupHeartbeatRequest


@pytest.mark.parametrize("fields,error,message", [
    (dict(member_id="", group_id="", member_epoch=0), E.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(member_id="m", group_id="", member_epoch=0), E.INVALID_REQUEST, "GroupId can't be empty."),
    (dict(member_id="m", group_id="   ", member_epoch=0), E.INVALID_REQUEST, "GroupId can't be empty."),
    (dict(member_id="m", group_id="foo", member_epoch=0), E.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="m", group_id="foo", member_epoch=0, rebalance_timeout_ms=5000), E.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", group_id="foo", member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=[]),
     E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(member_id="m", group_id="foo", member_epoch=1, instance_id=""), E.INVALID_REQUEST,
     "InstanceId can't be empty."),
    (dict(member_id="m", group_id="foo", member_epoch=1, rack_id=""), E.INVALID_REQUEST, "RackId can't be empty."),
    (dict(member_id="m", group_id="foo", member_epoch=1, server_assignor="bar"), E.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor bar is not supported. Supported assignors: range."),
    (dict(member_id="m", group_id="foo", member_epoch=-2, rebalance_timeout_ms=5000,
          subscribed_topic_names=["foo", "bar"], topic_partitions=[]), E.INVALID_REQUEST,
     "InstanceId can't be null."),
    (dict(member_id="m", group_id="foo", member_epoch=-3), E.INVALID_REQUEST, "MemberEpoch is invalid."),
])
def test_consumer_heartbeat_request_validation(fields, error, message):
    """GroupCoordinatorServiceTest.testConsumerHeartbeatRequestValidation (v1), plus the MemberEpoch < -2 rule."""
    env = CgEnv()
    r = env.send(Q(**fields), 1)
    assert (ErrorCode(r.error_code), r.error_message, r.member_id, r.member_epoch, r.assignment) == \
        (error, message, None, 0, None)


def test_consumer_heartbeat_v0_allows_an_empty_member_id_when_joining():
    """throwIfConsumerGroupHeartbeatRequestIsInvalid: below v1 (KIP-1082) an empty member id is checked only for
    epochs > 0 and -1."""
    env = CgEnv()
    env.assignor.prepare({})
    ok = env.send(Q(member_id="", group_id="foo", member_epoch=0, rebalance_timeout_ms=5000, topic_partitions=[],
                    subscribed_topic_names=["foo"]), 0)
    assert ok.error_code == 0 and ok.member_id
    bad = env.send(Q(member_id="", group_id="foo", member_epoch=1), 0)
    assert (bad.error_code, bad.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")


def test_consumer_heartbeat_not_coordinator():
    """The broker that does not lead the group's offsets partition: NOT_COORDINATOR without message."""
    env = CgEnv(brokers=2)
    other = 1 - env.svc.coordinator_of("foo")
    from coordinator import RequestContext
    out = env.svc.handle(other, Q(member_id="m", group_id="foo", member_epoch=1), RequestContext(99, 1), env.now)
    assert (out.answer.error_code, out.answer.error_message) == (E.NOT_COORDINATOR, None)


def _java_offsets_partition_order(partitions):
    """Iteration order of a small ``java.util.HashMap<TopicPartition, _>`` (16 buckets, fewer than 13 keys) filled
    in ``partitions`` order, worked out here from the JDK's rules: ``TopicPartition.hashCode`` = 31 * (31 +
    partition) + ``"__consumer_offsets".hashCode()``, bucket = (h ^ (h >>> 16)) & 15, buckets ascending,
    insertion order within a bucket."""
    s = 0
    for ch in "__consumer_offsets":
        s = (31 * s + ord(ch)) & 0xFFFFFFFF
    buckets = {}
    for p in partitions:
        h = (31 * (31 + p) + s) & 0xFFFFFFFF
        buckets.setdefault((h ^ (h >> 16)) & 15, []).append(p)
    return [p for b in sorted(buckets) for p in buckets[b]]


def test_describe_groups_v6_group_id_not_found():
    """GroupMetadataManager.describeGroups from v6 (KIP-1043): an unknown group is GROUP_ID_NOT_FOUND "Group X not
    found.", a consumer group is GROUP_ID_NOT_FOUND "Group X is not a classic group." (``classicGroup``), both in
    state "Dead"; a classic group is described without error."""
    from protocol.messages import DescribeGroupsRequest
    env = CgEnv()
    env.build_group("cg", 10, members=[M("m", member_epoch=10)])
    env.replay(R.GroupMetadata("classic", protocol_type="consumer", current_state_timestamp_ms=1000))
    got = env.send(DescribeGroupsRequest(groups=["cg", "unknown", "classic"]), 6).groups
    assert [(d.group_id, ErrorCode(d.error_code), d.error_message, d.group_state) for d in got] == [
        ("cg", E.GROUP_ID_NOT_FOUND, "Group cg is not a classic group.", "Dead"),
        ("unknown", E.GROUP_ID_NOT_FOUND, "Group unknown not found.", "Dead"),
        ("classic", E.NONE, None, "Empty")]
    # v5 has no error message and answers NONE for both.
    got = env.send(DescribeGroupsRequest(groups=["cg", "unknown"]), 5).groups
    assert [(d.error_code, d.group_state) for d in got] == [(0, "Dead"), (0, "Dead")]


def test_describe_groups_answers_per_offsets_partition_in_hashmap_order():
    """GroupCoordinatorService.describeGroups groups the ids by ``__consumer_offsets`` partition in a
    ``HashMap<TopicPartition, List<String>>`` and answers partition by partition in that map's order (request
    order within a partition), as ConsumerGroupDescribe does."""
    from protocol.messages import DescribeGroupsRequest
    env = CgEnv(**{"offsets.topic.num.partitions": 10})
    ids = [f"group-{i}" for i in range(12)]
    part = {g: env.svc.partition_for(g) for g in ids}
    assert len(set(part.values())) > 3  # the case needs several partitions
    order = _java_offsets_partition_order(list(dict.fromkeys(part[g] for g in ids)))
    expected = [g for p in order for g in ids if part[g] == p]
    assert expected != ids  # and an order that differs from the request's
    got = env.send(DescribeGroupsRequest(groups=ids), 5).groups
    assert [d.group_id for d in got] == expected


def test_consumer_group_maybe_delete():
    """testConsumerGroupMaybeDelete (through the offsets-expiry cycle that calls ``maybeDeleteGroup``): an empty
    consumer group without offsets is deleted with the target-assignment-metadata, partition-metadata and group
    epoch tombstones, in that order; a group with a member is not."""
    env = CgEnv(**{"offsets.retention.check.interval.ms": 10_000})
    env.build_group("group-id", 10)
    env.build_group("kept", 10, members=[M("member", member_epoch=10, previous_member_epoch=10)])
    recs = [r for r in env.advance(10_000) if r.DURABLE]
    assert recs == [R.ConsumerGroupTargetAssignmentMetadataTombstone("group-id"),
                    R.ConsumerGroupPartitionMetadataTombstone("group-id"),
                    R.ConsumerGroupMetadataTombstone("group-id")]
    assert env.group("group-id") is None and env.group("kept") is not None


def test_replay_consumer_group_partition_metadata_tombstone_with_existent_group():
    """testReplayConsumerGroupPartitionMetadataTombstoneWithExistentGroup: replaying the ConsumerGroupPartitionMetadata
    tombstone of an existing group leaves the group (no subscription metadata record to write later)."""
    env = CgEnv()
    env.build_group("foo", 10)
    env.replay(R.ConsumerGroupPartitionMetadataTombstone("foo"))
    g = env.group("foo")
    assert g is not None and g.group_epoch == 10

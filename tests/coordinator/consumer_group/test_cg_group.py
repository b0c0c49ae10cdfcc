"""Kafka 4.4's ``ConsumerGroupTest``, ported: expected values from the Java test.

Kafka's tests mutate the group directly (``updateMember``, ``removeMember``, ``setGroupEpoch``...); here every such
step is the records that make it (``cg_helpers``), replayed -- the only way this model changes.

Adapted: ``testRemovePartitionEpochs`` / ``testAddPartitionEpochs`` call package-private methods; here the same
situations are reached with member records. ``testAsListedGroup``, ``testValidateOffsetFetch``,
``testAsDescribedGroup``, ``testIsInStatesCaseInsensitive`` read Kafka's timeline at a committed offset; kgroup
replays committed records only, so they are checked on the latest state.
Not ported: ``testGroupTypeFromString`` (ListGroups' type filter), ``testMetadataRefreshDeadline`` (soft state of
the heartbeat handler, not records), ``testOffsetExpirationCondition`` (offset expiry lives with the offsets),
``testFromClassicGroup`` (online migration). ``testComputeMetadataHash*``: kgroup keeps no topic-hash cache (it
recomputes), so the cache cases reduce to their rule: the group hash over the topic hashes of the subscribed topics
the image knows (below).
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator import records as R
from coordinator.consumer_group import (ConsumerGroup, ConsumerGroupState, MemberState, SubscriptionCount,
                                        SubscriptionType, current_assignment_record, group_tombstone_records,
                                        member_metadata_record, subscription_type)
from coordinator.errors import ApiError, IllegalStateError

from cg_helpers import (member, mk_assignment, mk_epochs, remove_member, remove_resolved_regex,
                        remove_target_assignment, set_group_epoch, set_target_assignment_metadata, tid,
                        update_member, update_resolved_regex, update_target_assignment, with_epochs)

FOO, BAR, ZAR = tid("foo"), tid("bar"), tid("zar")
HOMO, HETERO = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
EMPTY, ASSIGNING, RECONCILING, STABLE = (ConsumerGroupState.EMPTY, ConsumerGroupState.ASSIGNING,
                                         ConsumerGroupState.RECONCILING, ConsumerGroupState.STABLE)
RANGE_ONLY = R.ClassicMemberMetadata(supported_protocols=(("range", b""),))
ROUNDROBIN_AND_RANGE = R.ClassicMemberMetadata(supported_protocols=(("roundrobin", b""), ("range", b"")))


def test_testGetOrCreateMember():
    g = ConsumerGroup("foo")
    m = g.get_or_create_member("member-id", True)
    assert m.member_id == "member-id"
    update_member(g, m)
    assert g.get_or_create_member("member-id", False).member_id == "member-id"
    with pytest.raises(ApiError) as e:
        g.get_or_create_member("does-not-exist", False)
    assert e.value.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_testUpdateMember():
    g = ConsumerGroup("foo")
    m = g.get_or_create_member("member", True).replace(subscribed_topic_names=frozenset({"foo", "bar"}))
    update_member(g, m)
    assert g.get_or_create_member("member", False) == m


def test_testNoStaticMember():
    g = ConsumerGroup("foo")
    g.get_or_create_member("member", True)
    assert g.static_member("instance-id") is None


def test_testGetStaticMemberByInstanceId():
    g = ConsumerGroup("foo")
    m = g.get_or_create_member("member", True).replace(subscribed_topic_names=frozenset({"foo", "bar"}),
                                                       instance_id="instance")
    update_member(g, m)
    assert g.static_member("instance") == m
    assert g.get_or_create_member("member", False) == m
    assert g.static_member_id("instance") == "member"


def test_testRemoveMember():
    g = ConsumerGroup("foo")
    update_member(g, g.get_or_create_member("member", True))
    assert g.has_member("member")
    remove_member(g, "member")
    assert not g.has_member("member")


def test_testRemoveStaticMember():
    g = ConsumerGroup("foo")
    update_member(g, member("member", subscribed_topic_names=["foo", "bar"], instance_id="instance"))
    assert g.has_member("member")
    remove_member(g, "member")
    assert not g.has_member("member")
    assert g.static_member("instance") is None and g.static_member_id("instance") is None


def _group_with_member_at_epoch_10() -> tuple[ConsumerGroup, object]:
    """A member at epoch 10 owning foo-1..3 (assigned at 5) and bar-4..6 (pending revocation, assigned at 6)."""
    g = ConsumerGroup("foo")
    m = member("member", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3)), 5),
               partitions_pending_revocation=with_epochs(mk_assignment((BAR, 4, 5, 6)), 6))
    update_member(g, m)
    assert [g.current_partition_epoch(FOO, p) for p in (1, 2, 3)] == [10, 10, 10]
    assert [g.current_partition_epoch(BAR, p) for p in (4, 5, 6)] == [10, 10, 10]
    assert [g.current_partition_epoch(ZAR, p) for p in (7, 8, 9)] == [-1, -1, -1]
    return g, m


def test_testUpdatingMemberUpdatesPartitionEpoch():
    g, m = _group_with_member_at_epoch_10()
    m = m.replace(member_epoch=11, assigned_partitions=with_epochs(mk_assignment((BAR, 1, 2, 3)), 7),
                  partitions_pending_revocation=with_epochs(mk_assignment((ZAR, 4, 5, 6)), 8))
    update_member(g, m)
    assert [g.current_partition_epoch(BAR, p) for p in (1, 2, 3)] == [11, 11, 11]
    assert [g.current_partition_epoch(ZAR, p) for p in (4, 5, 6)] == [11, 11, 11]
    assert [g.current_partition_epoch(FOO, p) for p in (7, 8, 9)] == [-1, -1, -1]


def test_testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsReassignedBeforeBeingRevoked():
    g = ConsumerGroup("foo")
    m = member("member", member_epoch=10, assigned_partitions={},
               partitions_pending_revocation=with_epochs(mk_assignment((FOO, 1)), 5))
    update_member(g, m)
    assert g.current_partition_epoch(FOO, 1) == 10
    update_member(g, m.replace(member_epoch=11, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 7),
                               partitions_pending_revocation={}))
    assert g.current_partition_epoch(FOO, 1) == 11


def test_testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsNotReleased():
    g = ConsumerGroup("foo")
    update_member(g, member("m1", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 5)))
    # m2 can acquire foo-1 because its epoch is larger than m1's.
    update_member(g, member("m2", member_epoch=11, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 7)))
    # m3 cannot: its epoch is smaller than the current partition epoch (11).
    with pytest.raises(IllegalStateError):
        update_member(g, member("m3", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 7)))
    assert g.current_partition_epoch(FOO, 1) == 11


def test_testRemovePartitionEpochs_adapted():
    # Removing at an epoch that no longer owns the partition does nothing: m2 took foo-1 at epoch 11, then m1
    # (epoch 10) lets go of it.
    g = ConsumerGroup("foo")
    m1 = member("m1", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 5))
    update_member(g, m1)
    update_member(g, member("m2", member_epoch=11, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 7)))
    # Kafka's updateMember re-adds a member's partitions on *any* update: a record of m1 while it still lists foo-1
    # at epoch 10 (m2 owns it at 11) is refused, and changes nothing.
    before = g.snapshot()
    with pytest.raises(IllegalStateError):
        g.replay(member_metadata_record("foo", m1.replace(client_id="x")))
    assert g.snapshot() == before
    g.replay(current_assignment_record("foo", m1.replace(assigned_partitions={})))
    assert g.current_partition_epoch(FOO, 1) == 11


def test_testAddPartitionEpochs_adapted():
    g = ConsumerGroup("foo")
    update_member(g, member("a", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 10)))
    # A larger epoch takes the partition over ...
    update_member(g, member("b", member_epoch=11, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 11)))
    assert g.current_partition_epoch(FOO, 1) == 11
    # ... a smaller (or equal) one cannot.
    with pytest.raises(IllegalStateError, match=r"Cannot set the epoch of .*-1 to 10 because the partition is "
                                                r"still owned at epoch 11"):
        update_member(g, member("c", member_epoch=10, assigned_partitions=with_epochs(mk_assignment((FOO, 1)), 10)))


def test_testDeletingMemberRemovesPartitionEpoch():
    g, _ = _group_with_member_at_epoch_10()
    remove_member(g, "member")
    assert [g.current_partition_epoch(BAR, p) for p in (1, 2, 3)] == [-1, -1, -1]
    assert [g.current_partition_epoch(ZAR, p) for p in (4, 5, 6)] == [-1, -1, -1]
    assert [g.current_partition_epoch(FOO, p) for p in (1, 2, 3, 7, 8, 9)] == [-1] * 6
    assert g.current_partition_epochs == {}


def test_testWaitingOnUnreleasedPartition():
    g = ConsumerGroup("foo")
    update_target_assignment(g, "m1", mk_assignment((FOO, 1, 2, 3), (ZAR, 7, 8, 9)))
    m1 = member("m1", member_epoch=10, state=MemberState.UNRELEASED_PARTITIONS,
                assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3)), 5),
                partitions_pending_revocation=with_epochs(mk_assignment((BAR, 4, 5, 6)), 6))
    update_member(g, m1)
    assert not g.waiting_on_unreleased_partition(m1)
    update_member(g, member("m2", member_epoch=10,
                            partitions_pending_revocation=with_epochs(mk_assignment((ZAR, 7)), 7)))
    assert g.waiting_on_unreleased_partition(m1)


def test_testGroupState():
    g = ConsumerGroup("foo")
    assert g.state == EMPTY
    m1 = member("member1", state=MemberState.STABLE, member_epoch=2, previous_member_epoch=0)
    update_member(g, m1)
    set_group_epoch(g, 2)
    assert g.state == ASSIGNING
    m2 = member("member2", state=MemberState.STABLE, member_epoch=2, previous_member_epoch=0)
    update_member(g, m2)
    set_group_epoch(g, 3)
    assert g.state == ASSIGNING
    set_target_assignment_metadata(g, 3, 12345)
    assert g.state == RECONCILING
    update_member(g, m1.replace(state=MemberState.STABLE, member_epoch=3, previous_member_epoch=2))
    assert g.state == RECONCILING
    # Member 2 is not stable so the group stays reconciling.
    m2 = m2.replace(state=MemberState.UNREVOKED_PARTITIONS, member_epoch=3, previous_member_epoch=2)
    update_member(g, m2)
    assert g.state == RECONCILING
    update_member(g, m2.replace(state=MemberState.STABLE))
    assert g.state == STABLE
    remove_member(g, "member1")
    remove_member(g, "member2")
    assert g.state == EMPTY


def test_testPreferredServerAssignor():
    g = ConsumerGroup("foo")
    m1 = member("member1", server_assignor_name="range")
    m2 = member("member2", server_assignor_name="range")
    m3 = member("member3", server_assignor_name="uniform")
    assert g.preferred_server_assignor() is None  # empty group
    assert g.compute_preferred_server_assignor(None, m1) == "range"
    update_member(g, m1)
    assert g.preferred_server_assignor() == "range"
    assert g.compute_preferred_server_assignor(m1, None) is None
    assert g.compute_preferred_server_assignor(None, m2) == "range"
    update_member(g, m2)
    assert g.preferred_server_assignor() == "range"
    update_member(g, m3)
    assert g.preferred_server_assignor() == "range"
    u1, u2, u3 = (member(f"member{i}", server_assignor_name=None) for i in (1, 2, 3))
    # A tie: Kafka's test accepts either (the exact pick is checked against a JDK in test_cg_java_orders.py).
    assert g.compute_preferred_server_assignor(m1, u1) in ("range", "uniform")
    update_member(g, u1)
    assert g.compute_preferred_server_assignor(m2, u2) == "uniform"
    update_member(g, u2)
    assert g.preferred_server_assignor() == "uniform"
    assert g.compute_preferred_server_assignor(m3, u3) is None
    update_member(g, u3)
    assert g.preferred_server_assignor() is None


def test_testUpdateSubscribedTopicNamesAndSubscriptionType():
    m1 = member("member1", subscribed_topic_names=["foo"])
    m2 = member("member2", subscribed_topic_names=["bar", "foo"])
    m3 = member("member3", subscribed_topic_names=["bar", "foo"])
    g = ConsumerGroup("group-foo")
    assert g.subscribed_topic_names == {} and g.subscription_type == HOMO
    update_member(g, m1)
    assert g.subscription_type == HOMO
    update_member(g, m2)
    assert g.subscription_type == HETERO
    update_member(g, m3)
    assert g.subscription_type == HETERO
    remove_member(g, "member1")
    assert g.subscription_type == HOMO
    update_member(g, member("member2", subscribed_topic_names=["bar", "foo", "zar"]))
    assert g.subscription_type == HETERO


def test_testUpdateInvertedAssignment():
    g = ConsumerGroup("test-group")
    update_target_assignment(g, "member1", {FOO: {0}})
    assert g.inverted_target_assignment == {FOO: {0: "member1"}}
    update_target_assignment(g, "member1", {FOO: {1}})
    assert g.inverted_target_assignment == {FOO: {1: "member1"}}
    update_target_assignment(g, "member2", {FOO: {1}})
    assert g.inverted_target_assignment == {FOO: {1: "member2"}}
    # member1 revokes 1 (already given to member2) and gets 0.
    update_target_assignment(g, "member1", {FOO: {0}})
    assert g.inverted_target_assignment == {FOO: {0: "member1", 1: "member2"}}
    remove_target_assignment(g, "member1")
    assert g.inverted_target_assignment == {FOO: {1: "member2"}}


# --- offset commit / fetch validation ----------------------------------------------------------------------------

OFFSET_COMMIT_VERSIONS = range(2, 11)  # OffsetCommitRequest.json validVersions 2-10 (4.4)
TXN_OFFSET_COMMIT_VERSIONS = range(0, 7)  # TxnOffsetCommitRequest.json validVersions 0-6


def _error(validation) -> ErrorCode:
    return validation.error.error if validation.error else ErrorCode.NONE


@pytest.mark.parametrize("version", TXN_OFFSET_COMMIT_VERSIONS)
def test_testValidateTransactionalOffsetCommit(version):
    g = ConsumerGroup("group-foo")
    v = lambda mid, inst, epoch: _error(g.validate_offset_commit(mid, inst, epoch, api_version=version,  # noqa: E731
                                                                 is_transactional=True))
    assert v("", "", -1) == ErrorCode.NONE  # admin client, empty group
    assert v("member-id", None, 0) == ErrorCode.UNKNOWN_MEMBER_ID
    update_member(g, member("member-id"))
    assert v("", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # not empty any more
    assert v("member-id", "", 10) == ErrorCode.STALE_MEMBER_EPOCH
    assert v("member-id", "", 0) == ErrorCode.NONE
    assert v("", None, -1) == ErrorCode.NONE


@pytest.mark.parametrize("version", OFFSET_COMMIT_VERSIONS)
def test_testValidateOffsetCommit(version):
    g = ConsumerGroup("group-foo")
    v = lambda mid, inst, epoch: _error(g.validate_offset_commit(mid, inst, epoch, api_version=version))  # noqa: E731
    assert v("", "", -1) == ErrorCode.NONE
    assert v("member-id", None, 0) == ErrorCode.UNKNOWN_MEMBER_ID
    update_member(g, member("new-protocol-member-id"))
    update_member(g, member("old-protocol-member-id", classic_member_metadata=R.ClassicMemberMetadata()))
    assert v("", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert v("", None, -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert v("new-protocol-member-id", "", 0) == (ErrorCode.NONE if version >= 9 else ErrorCode.UNSUPPORTED_VERSION)


EPOCH_VALIDATION_PARAMS = ([(False, v, t) for v in OFFSET_COMMIT_VERSIONS for t in ("ASSIGNED", "PENDING_REVOCATION")]
                           + [(True, v, t) for v in TXN_OFFSET_COMMIT_VERSIONS
                              for t in ("ASSIGNED", "PENDING_REVOCATION")])


@pytest.mark.parametrize("is_transactional,version,assignment_type", EPOCH_VALIDATION_PARAMS)
def test_testValidateOffsetCommitWithEpochValidation(is_transactional, version, assignment_type):
    g = ConsumerGroup("group-foo")
    parts = mk_epochs((FOO, 7, 0))
    update_member(g, member("member-id", member_epoch=10,
                            **{"assigned_partitions" if assignment_type == "ASSIGNED"
                               else "partitions_pending_revocation": parts}))
    validate = lambda epoch: g.validate_offset_commit("member-id", "", epoch, api_version=version,  # noqa: E731
                                                      is_transactional=is_transactional)
    if not (is_transactional or version >= 9):
        for epoch in (11, 10, 7, 6):
            assert _error(validate(epoch)) == ErrorCode.UNSUPPORTED_VERSION
        return
    assert _error(validate(11)) == ErrorCode.STALE_MEMBER_EPOCH  # client epoch newer than the broker's
    assert validate(10).partition_error("foo", FOO, 0) is None
    assert validate(7).partition_error("foo", FOO, 0) is None  # assignment epoch 7 <= 7 <= 10
    assert validate(6).partition_error("foo", FOO, 0) == ApiError(
        ErrorCode.STALE_MEMBER_EPOCH, "Received member epoch 6 is older than assignment epoch 7 for partition foo-0.")


VERSIONS_AND_TRANSACTIONAL = ([(False, v) for v in OFFSET_COMMIT_VERSIONS]
                              + [(True, v) for v in TXN_OFFSET_COMMIT_VERSIONS])


@pytest.mark.parametrize("is_transactional,version", VERSIONS_AND_TRANSACTIONAL)
def test_testValidateOffsetCommitWithClassicProtocolMember(is_transactional, version):
    g = ConsumerGroup("group-foo")
    update_member(g, member("member-id", member_epoch=10, classic_member_metadata=R.ClassicMemberMetadata(),
                            assigned_partitions=mk_epochs((FOO, 7, 0))))
    validate = lambda epoch: g.validate_offset_commit("member-id", "", epoch, api_version=version,  # noqa: E731
                                                      is_transactional=is_transactional)
    assert _error(validate(11)) == ErrorCode.ILLEGAL_GENERATION
    ten = validate(10)
    assert ten.error is None and ten.member is None  # NO_OP: no per-partition check
    assert validate(7).partition_error("foo", FOO, 0) is None
    assert validate(6).partition_error("foo", FOO, 0).error == ErrorCode.ILLEGAL_GENERATION


@pytest.mark.parametrize("is_transactional,version", VERSIONS_AND_TRANSACTIONAL)
def test_testValidateOffsetCommitWithUnassignedTopicOrPartition(is_transactional, version):
    g = ConsumerGroup("group-foo")
    update_member(g, member("member-id", member_epoch=10, assigned_partitions=mk_epochs((FOO, 7, 0)),
                            partitions_pending_revocation=mk_epochs((FOO, 7, 1))))
    validation = g.validate_offset_commit("member-id", "", 7, api_version=version, is_transactional=is_transactional)
    if not (is_transactional or version >= 9):
        assert _error(validation) == ErrorCode.UNSUPPORTED_VERSION
        return
    assert validation.partition_error("bar", tid("unassigned"), 0) == ApiError(
        ErrorCode.STALE_MEMBER_EPOCH, "Partition bar-0 is not assigned or pending revocation for member.")
    assert validation.partition_error("foo", FOO, 2) == ApiError(
        ErrorCode.STALE_MEMBER_EPOCH, "Partition foo-2 is not assigned or pending revocation for member.")


def test_offset_commit_before_kip_1251():
    """``assignment_epoch_validation=False``: Kafka 4.0-4.2's rule (``validateMemberEpoch``), any other epoch is
    stale (4.2's ConsumerGroup.validateOffsetCommit)."""
    g = ConsumerGroup("g")
    update_member(g, member("m", member_epoch=10, assigned_partitions=mk_epochs((FOO, 7, 0))))
    old = lambda epoch: g.validate_offset_commit("m", None, epoch, api_version=9,  # noqa: E731
                                                 assignment_epoch_validation=False)
    assert old(10).error is None and old(10).member is None
    assert old(7).error == ApiError(ErrorCode.STALE_MEMBER_EPOCH,
                                    "The received member epoch 7 does not match the expected member epoch 10.")
    assert old(11).error.error == ErrorCode.STALE_MEMBER_EPOCH


def test_testAsListedGroup_latest_state():
    g = ConsumerGroup("group-foo")
    assert str(g.state) == "Empty"
    update_member(g, member("member1", member_epoch=1, subscribed_topic_names=["foo"]))
    assert str(g.state) == "Stable"


def test_testValidateOffsetFetch():
    g = ConsumerGroup("group-foo")
    assert g.validate_offset_fetch(None, -1) is None  # admin client
    assert g.validate_offset_fetch("member-id", 0).error == ErrorCode.UNKNOWN_MEMBER_ID
    update_member(g, member("member-id"))
    assert g.validate_offset_fetch("member-id", 10) == ApiError(
        ErrorCode.STALE_MEMBER_EPOCH, "The received member epoch 10 does not match the expected member epoch 0.")
    assert g.validate_offset_fetch("member-id", 0) is None


def test_testValidateDeleteGroup():
    g = ConsumerGroup("foo")
    assert g.state == EMPTY and g.validate_delete_group() is None
    update_member(g, member("member1", member_epoch=2, previous_member_epoch=0))
    assert g.state == RECONCILING and g.validate_delete_group().error == ErrorCode.NON_EMPTY_GROUP
    set_group_epoch(g, 2)
    assert g.state == ASSIGNING and g.validate_delete_group().error == ErrorCode.NON_EMPTY_GROUP
    set_target_assignment_metadata(g, 2, 12345)
    assert g.state == STABLE and g.validate_delete_group().error == ErrorCode.NON_EMPTY_GROUP


def test_testIsSubscribedToTopic():
    g = ConsumerGroup("group-foo")
    update_member(g, member("member1", subscribed_topic_names=["foo"]))
    update_member(g, member("member2", subscribed_topic_names=["bar"]))
    assert g.is_subscribed_to_topic("foo") and g.is_subscribed_to_topic("bar")
    remove_member(g, "member1")
    assert not g.is_subscribed_to_topic("foo")
    remove_member(g, "member2")
    assert not g.is_subscribed_to_topic("bar")


def test_testAsDescribedGroup():
    from protocol.messages import ConsumerGroupDescribeResponse as Resp
    G, M = Resp.DescribedGroup, Resp.DescribedGroup.Member
    g = ConsumerGroup("group-id-1")
    update_member(g, member("member1", member_epoch=1, subscribed_topic_names=["foo"],
                            server_assignor_name="assignorName"))
    update_member(g, member("member2", member_epoch=1))
    expected = G(group_id="group-id-1", group_state="Stable", group_epoch=1, assignment_epoch=1,
                 assignor_name="assignorName",
                 members=[M(member_id="member1", member_epoch=1, subscribed_topic_names=["foo"],
                            subscribed_topic_regex="", member_type=1),
                          M(member_id="member2", member_epoch=1, subscribed_topic_regex="", member_type=1)])
    assert g.as_described_group("", {}) == expected


def test_testIsInStatesCaseInsensitive_latest_state():
    g = ConsumerGroup("group-foo")
    assert g.is_in_states({"empty"}) and not g.is_in_states({"Empty"})
    update_member(g, member("member1", member_epoch=1, subscribed_topic_names=["foo"]))
    assert g.is_in_states({"stable"}) and not g.is_in_states({"empty"})


def test_testClassicMembersSupportedProtocols():
    g = ConsumerGroup("foo")
    m1 = member("member-1", classic_member_metadata=RANGE_ONLY)
    m2 = member("member-2", classic_member_metadata=ROUNDROBIN_AND_RANGE)
    update_member(g, m1)
    update_member(g, m2)
    assert g.classic_members_supported_protocols() == {"range": 2, "roundrobin": 1}
    assert g.supports_classic_protocols("consumer", {"range", "sticky"})
    assert not g.supports_classic_protocols("consumer", {"sticky", "roundrobin"})
    update_member(g, m2.replace(classic_member_metadata=RANGE_ONLY))
    assert g.classic_members_supported_protocols() == {"range": 2}
    update_member(g, m1.replace(classic_member_metadata=ROUNDROBIN_AND_RANGE))
    update_member(g, m2.replace(classic_member_metadata=ROUNDROBIN_AND_RANGE))
    assert g.classic_members_supported_protocols() == {"range": 2, "roundrobin": 2}
    assert g.supports_classic_protocols("consumer", {"sticky", "roundrobin"})


def test_testNumClassicProtocolMembers():
    g = ConsumerGroup("foo")
    m1 = member("member-1", classic_member_metadata=RANGE_ONLY)
    update_member(g, m1)
    assert g.num_classic_protocol_members == 1
    m2 = member("member-2")
    update_member(g, m2)
    assert g.num_classic_protocol_members == 1
    assert not g.all_members_use_classic_protocol_except(m1)
    assert g.all_members_use_classic_protocol_except(m2)
    remove_member(g, "member-1")
    update_member(g, member("member-3"))
    assert g.num_classic_protocol_members == 0
    assert not g.all_members_use_classic_protocol_except(m2)
    remove_member(g, "member-2")
    update_member(g, member("member-2", classic_member_metadata=RANGE_ONLY))
    assert g.num_classic_protocol_members == 1


@pytest.mark.parametrize("classic,consumer,removed_classic,removed_consumer,expected", [
    (5, 5, 0, 0, False), (5, 5, 0, 4, False), (5, 5, 1, 4, False), (5, 5, 0, 5, True), (5, 5, 1, 5, True),
    (5, 5, 5, 5, True), (5, 0, 0, 0, True), (5, 0, 1, 0, True)])
def test_testAllMembersUseClassicProtocolExcept(classic, consumer, removed_classic, removed_consumer, expected):
    g = ConsumerGroup("foo")
    classic_members = [member(f"classic-member-{i}", classic_member_metadata=RANGE_ONLY) for i in range(classic)]
    consumer_members = [member(f"consumer-member-{i}") for i in range(consumer)]
    for m in classic_members + consumer_members:
        update_member(g, m)
    assert g.num_classic_protocol_members == classic
    removed = classic_members[:removed_classic] + consumer_members[:removed_consumer]
    assert g.all_members_use_classic_protocol_except_all(removed) is expected


def test_testSubscribedRegularExpressionCount():
    g = ConsumerGroup("foo")
    m1, m2, m3, m4 = (member("member1", subscribed_topic_regex="regex1"),
                      member("member2", subscribed_topic_regex="regex2"),
                      member("member3", subscribed_topic_regex="regex1"), member("member4"))
    counts = lambda: [g.num_subscribed_members(r) for r in ("", "regex1", "regex2", "regex3")]  # noqa: E731
    assert counts() == [0, 0, 0, 0]
    update_member(g, m1)
    assert counts() == [0, 1, 0, 0]
    update_member(g, m2)
    assert counts() == [0, 1, 1, 0]
    update_member(g, m3)
    assert counts() == [0, 2, 1, 0]
    update_member(g, m4)
    assert counts() == [0, 2, 1, 0]
    update_member(g, m3.replace(subscribed_topic_regex="regex2"))
    assert counts() == [0, 1, 2, 0]
    remove_member(g, "member1")
    assert counts() == [0, 0, 2, 0]
    remove_member(g, "member2")
    assert counts() == [0, 0, 1, 0]
    remove_member(g, "member3")
    assert counts() == [0, 0, 0, 0]


def _sc(by_name, by_regex):
    return SubscriptionCount(by_name, by_regex)


def test_testUpdateAndRemoveRegularExpression():
    g = ConsumerGroup("foo")
    update_member(g, member("member1", subscribed_topic_names=["foo", "bar", "zar"]))
    update_member(g, member("member2", subscribed_topic_names=["foo", "bar"]))
    assert g.subscribed_topic_names == {"foo": _sc(2, 0), "bar": _sc(2, 0), "zar": _sc(1, 0)}
    update_resolved_regex(g, "foo|bar", {"foo", "bar"}, 10, 12345)
    assert g.subscribed_topic_names == {"foo": _sc(2, 1), "bar": _sc(2, 1), "zar": _sc(1, 0)}
    update_resolved_regex(g, "foobar", {"foobar"}, 10, 12345)
    assert g.subscribed_topic_names == {"foo": _sc(2, 1), "bar": _sc(2, 1), "zar": _sc(1, 0), "foobar": _sc(0, 1)}
    update_resolved_regex(g, "foo|bar", {"foo"}, 10, 12345)
    assert g.subscribed_topic_names == {"foo": _sc(2, 1), "bar": _sc(2, 0), "zar": _sc(1, 0), "foobar": _sc(0, 1)}
    remove_resolved_regex(g, "foo|bar")
    assert g.subscribed_topic_names == {"foo": _sc(2, 0), "bar": _sc(2, 0), "zar": _sc(1, 0), "foobar": _sc(0, 1)}
    remove_resolved_regex(g, "foobar")
    assert g.subscribed_topic_names == {"foo": _sc(2, 0), "bar": _sc(2, 0), "zar": _sc(1, 0)}


def test_testComputeSubscribedTopicNamesWithoutDeletedMembers():
    g = ConsumerGroup("foo")
    ms = [member("member1", subscribed_topic_names=["foo", "bar", "zar"]),
          member("member2", subscribed_topic_names=["foo", "bar"]),
          member("member3", subscribed_topic_regex="foo*"), member("member4", subscribed_topic_regex="foo*"),
          member("member5", subscribed_topic_regex="bar*"), member("member6", subscribed_topic_regex="bar*")]
    for m in ms:
        update_member(g, m)
    update_resolved_regex(g, "foo*", {"foo", "fooo"}, 10, 12345)
    update_resolved_regex(g, "bar*", {"bar", "barr"}, 10, 12345)
    assert g.subscribed_topic_names == {"foo": _sc(2, 1), "fooo": _sc(0, 1), "bar": _sc(2, 1), "barr": _sc(0, 1),
                                        "zar": _sc(1, 0)}
    assert g.compute_subscribed_topic_names_without_deleted_members(ms[1:5], {"foo*"}) == {
        "foo": _sc(1, 0), "bar": _sc(1, 1), "barr": _sc(0, 1), "zar": _sc(1, 0)}


def test_testComputeSubscribedTopicNames():
    g = ConsumerGroup("foo")
    update_member(g, member("member1", subscribed_topic_names=["foo", "bar", "zar"]))
    update_member(g, member("member2", subscribed_topic_names=["foo", "bar"]))
    m3 = member("member3", subscribed_topic_names=["foo"], subscribed_topic_regex="foo*")
    update_member(g, m3)
    update_resolved_regex(g, "foo*", {"foo", "fooo"}, 10, 12345)
    initial = {"foo": _sc(3, 1), "fooo": _sc(0, 1), "bar": _sc(2, 0), "zar": _sc(1, 0)}
    assert g.subscribed_topic_names == initial
    assert g.compute_subscribed_topic_names(m3, m3) == initial
    assert g.compute_subscribed_topic_names(m3, m3.replace(subscribed_topic_regex="")) == {
        "foo": _sc(3, 0), "bar": _sc(2, 0), "zar": _sc(1, 0)}
    assert g.compute_subscribed_topic_names(m3, m3.replace(subscribed_topic_names=frozenset())) == {
        "foo": _sc(2, 1), "fooo": _sc(0, 1), "bar": _sc(2, 0), "zar": _sc(1, 0)}
    assert g.compute_subscribed_topic_names(m3, m3.replace(subscribed_topic_names=frozenset(),
                                                           subscribed_topic_regex="")) == {
        "foo": _sc(2, 0), "bar": _sc(2, 0), "zar": _sc(1, 0)}


def _group_for_tombstones() -> ConsumerGroup:
    g = ConsumerGroup("foo")
    set_group_epoch(g, 10)
    update_member(g, member("member1", member_epoch=10, subscribed_topic_names=["foo", "bar", "zar"],
                            assigned_partitions=with_epochs(mk_assignment((tid("t1"), 0, 1, 2)), 5)))
    update_member(g, member("member2", member_epoch=10, subscribed_topic_names=["foo", "bar"],
                            assigned_partitions=with_epochs(mk_assignment((tid("t2"), 0, 1, 2)), 6)))
    update_member(g, member("member3", member_epoch=10, subscribed_topic_regex="foo*",
                            assigned_partitions=with_epochs(mk_assignment((tid("t3"), 0, 1, 2)), 7)))
    update_resolved_regex(g, "foo*", {"foo", "fooo"}, 10, 12345)
    for i, mid in enumerate(("member1", "member2", "member3")):
        update_target_assignment(g, mid, mk_assignment((tid(f"x{i}"), 0, 1, 2)))
    return g


def _assert_unordered_groups(expected: list[list[R.Record]], actual: list[R.Record]) -> None:
    """Kafka's ``assertUnorderedRecordsEquals``: the groups in order, each group in any order."""
    i = 0
    for group in expected:
        assert sorted(map(repr, actual[i:i + len(group)])) == sorted(map(repr, group))
        i += len(group)
    assert i == len(actual)


@pytest.mark.parametrize("replaced", [None, ("member3", "member4")],
                         ids=["testCreateGroupTombstoneRecords", "testCreateGroupTombstoneRecordsWithReplacedMember"])
def test_testCreateGroupTombstoneRecords(replaced):
    g = _group_for_tombstones()
    ids = ["member1", "member2", "member4" if replaced else "member3"]
    _assert_unordered_groups([
        [R.ConsumerGroupCurrentMemberAssignmentTombstone("foo", member_id=m) for m in ids],
        [R.ConsumerGroupTargetAssignmentMemberTombstone("foo", member_id=m) for m in ids],
        [R.ConsumerGroupTargetAssignmentMetadataTombstone("foo")],
        [R.ConsumerGroupMemberMetadataTombstone("foo", member_id=m) for m in ids],
        [R.ConsumerGroupRegularExpressionTombstone("foo", regular_expression="foo*")],
        [R.ConsumerGroupPartitionMetadataTombstone("foo")],
        [R.ConsumerGroupMetadataTombstone("foo")],
    ], group_tombstone_records(g, replaced))


def test_testSubscriptionType():
    assert subscription_type({}, {}, 0) == HOMO
    assert subscription_type({}, {"foo": _sc(5, 0)}, 5) == HOMO
    assert subscription_type({}, {"foo": _sc(4, 0), "bar": _sc(1, 0)}, 5) == HETERO
    assert subscription_type({"foo*": 5}, {"foo": _sc(0, 1)}, 5) == HOMO
    assert subscription_type({"foo*": 5}, {"foo": _sc(0, 1), "food": _sc(0, 1)}, 5) == HOMO
    assert subscription_type({"foo*": 5}, {"foo": _sc(1, 1)}, 5) == HETERO
    assert subscription_type({"foo*": 5}, {"foo": _sc(0, 1), "bar": _sc(1, 0)}, 5) == HETERO
    assert subscription_type({"foo*": 4, "bar*": 1}, {"foo": _sc(0, 1), "bar": _sc(0, 1)}, 5) == HETERO


def test_testComputeSubscribedRegularExpressions():
    g = ConsumerGroup("foo")
    set_group_epoch(g, 10)
    update_member(g, member("m1", subscribed_topic_regex="foo*"))
    update_member(g, member("m2", subscribed_topic_regex="foo*"))
    assert g.compute_subscribed_regular_expressions(None, member("m3", subscribed_topic_regex="foo*")) == {"foo*": 3}
    assert g.compute_subscribed_regular_expressions(member("m2", subscribed_topic_regex="foo*"), None) == {"foo*": 1}
    assert g.compute_subscribed_regular_expressions(None, member("m4", subscribed_topic_regex="bar*")) == {
        "foo*": 2, "bar*": 1}
    assert g.compute_subscribed_regular_expressions(member("m2", subscribed_topic_regex="foo*"),
                                                    member("m2", subscribed_topic_regex="bar*")) == {
        "foo*": 1, "bar*": 1}


def test_testComputeMetadataHash_and_IgnoreTopicHashIfItIsNotInMetadataImage():
    """ModernGroup.computeMetadataHash: computeGroupHash over computeTopicHash of each subscribed topic; a subscribed
    topic the metadata image does not hold (``zar``) takes no part; no topic -> 0."""
    from coordinator.metadata_image import (MetadataImage, TopicMetadata, compute_group_hash, compute_metadata_hash,
                                            compute_topic_hash)
    foo, bar = TopicMetadata("fooIdAAAAAAAAAAAAAAAAA", "foo", 1, (("rack0",),)), TopicMetadata(
        "barIdAAAAAAAAAAAAAAAAA", "bar", 1, (("rack1",),))
    image = MetadataImage(1, [foo, bar])
    expected = compute_group_hash({"foo": compute_topic_hash(foo), "bar": compute_topic_hash(bar)})
    assert compute_metadata_hash(["foo", "bar"], image) == expected
    assert compute_metadata_hash(["bar", "zar", "foo"], image) == expected
    assert compute_metadata_hash(["zar"], image) == 0 and compute_group_hash({}) == 0
    # The topic hash covers partitions and racks: another rack changes it.
    assert compute_topic_hash(TopicMetadata("fooIdAAAAAAAAAAAAAAAAA", "foo", 1, (("rack9",),))) != \
        compute_topic_hash(foo)

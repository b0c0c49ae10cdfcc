"""Kafka 4.4's ``CurrentAssignmentBuilderTest`` (modern/consumer), every test method, as a table.

Each case: the member before, the builder's inputs, the member Kafka's test expects (or FENCED_MEMBER_EPOCH). The
expected members are transcribed from the Java test, not computed.
"""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode

from coordinator.consumer_group import MemberState, ResolvedRegularExpression
from coordinator.errors import ApiError
from coordinator.reconciliation import UNKNOWN_STATE_MESSAGE, reconcile, subscribed_topic_ids

from cg_helpers import member, mk_assignment, mk_epochs, tid, with_epochs

T1, T2 = tid("topic1"), tid("topic2")
FOO, BAR = tid("foo"), tid("bar")
IMAGE = {"topic1": T1, "topic2": T2, "foo": FOO, "bar": BAR}  # every test's metadata image (10 partitions each)
S, UNREV, UNREL, UNKNOWN = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS,
                            MemberState.UNRELEASED_PARTITIONS, MemberState.UNKNOWN)
BOTH = ["topic1", "topic2"]


def owned(*entries):
    return [(t, list(ps)) for t, *ps in entries]


def epoch_of(fn):
    return fn if callable(fn) else (lambda topic_id, partition: fn)


def unrevoked_returned_epochs(topic_id, partition):
    # testUnrevokedPartitionsToStableWithReturnedPartitionsPendingRevocation's currentPartitionEpoch
    if topic_id == T1 and partition in (2, 3, 4):
        return 10
    if topic_id == T2 and partition in (5, 6):
        return 10
    return -1


CASES = {
    "testStableToStable": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 5)),
        target_epoch=11, target=mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), partition_epoch=10,
        expected=member("member", state=S, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 5))),
    "testStableToStableWithNewPartitions": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 10)),
        target_epoch=11, target=mk_assignment((T1, 1, 2, 3, 4), (T2, 4, 5, 6, 7)), partition_epoch=-1,
        expected=member("member", state=S, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=BOTH,
                        assigned_partitions=mk_epochs((T1, 10, 1, 2, 3), (T1, 11, 4), (T2, 10, 4, 5, 6),
                                                      (T2, 11, 7)))),
    "testStableToUnrevokedPartitions": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 10)),
        target_epoch=11, target=mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)), partition_epoch=-1,
        expected=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
                        partitions_pending_revocation=with_epochs(mk_assignment((T1, 1), (T2, 4)), 10))),
    "testStableToUnreleasedPartitions": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 10)),
        target_epoch=11, target=mk_assignment((T1, 1, 2, 3, 4), (T2, 4, 5, 6, 7)), partition_epoch=10,
        expected=member("member", state=UNREL, member_epoch=11, previous_member_epoch=10,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 10))),
    "testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), 10)),
        target_epoch=11, target=mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 7)),
        partition_epoch=lambda t, p: 10 if t == T2 else -1, owned=[],
        expected=member("member", state=UNREL, member_epoch=11, previous_member_epoch=10,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5)), 10))),
    "testUnrevokedPartitionsToStable": dict(
        member=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
                      partitions_pending_revocation=with_epochs(mk_assignment((T1, 1), (T2, 4)), 10)),
        target_epoch=11, target=mk_assignment((T1, 2, 3), (T2, 5, 6)), partition_epoch=-1,
        owned=owned((T1, 2, 3), (T2, 5, 6)),
        expected=member("member", state=S, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10))),
    "testUnrevokedPartitionsToUnrevokedPartitions": dict(
        member=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
                      partitions_pending_revocation=with_epochs(mk_assignment((T1, 1), (T2, 4)), 10)),
        target_epoch=12, target=mk_assignment((T1, 3), (T2, 6)), partition_epoch=-1,
        owned=owned((T1, 2, 3), (T2, 5, 6)),
        expected=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 3), (T2, 6)), 10),
                        partitions_pending_revocation=with_epochs(mk_assignment((T1, 2), (T2, 5)), 10))),
    "testUnrevokedPartitionsToUnreleasedPartitions": dict(
        member=member("member", state=UNREV, member_epoch=11, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11)),
        target_epoch=11, target=mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)), partition_epoch=10,
        owned=owned((T1, 2, 3), (T2, 5, 6)),
        expected=member("member", state=UNREL, member_epoch=11, previous_member_epoch=11,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11))),
    "testUnrevokedPartitionsToStableWithReturnedPartitionsPendingRevocation": dict(
        member=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
                      partitions_pending_revocation=with_epochs(mk_assignment((T1, 4)), 10)),
        target_epoch=12, target=mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)),
        partition_epoch=unrevoked_returned_epochs, owned=owned((T1, 2, 3), (T2, 5, 6)),
        expected=member("member", state=S, member_epoch=12, previous_member_epoch=10, subscribed_topic_names=BOTH,
                        assigned_partitions=mk_epochs((T1, 10, 2, 3), (T1, 12, 4), (T2, 10, 5, 6), (T2, 12, 7)))),
    "testUnreleasedPartitionsToStable": dict(
        member=member("member", state=UNREL, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11)),
        target_epoch=12, target=mk_assignment((T1, 2, 3), (T2, 5, 6)), partition_epoch=10,
        expected=member("member", state=S, member_epoch=12, previous_member_epoch=11, subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11))),
    "testUnreleasedPartitionsToStableWithNewPartitions": dict(
        member=member("member", state=UNREL, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11)),
        target_epoch=11, target=mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)), partition_epoch=-1,
        expected=member("member", state=S, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)), 11))),
    "testUnreleasedPartitionsToUnreleasedPartitions": dict(
        member=member("member", state=UNREL, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11)),
        target_epoch=11, target=mk_assignment((T1, 2, 3, 4), (T2, 5, 6, 7)), partition_epoch=10,
        expected="unchanged"),
    "testUnreleasedPartitionsToUnrevokedPartitions": dict(
        member=member("member", state=UNREL, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 11)),
        target_epoch=12, target=mk_assignment((T1, 3), (T2, 6)), partition_epoch=10,
        expected=member("member", state=UNREV, member_epoch=11, previous_member_epoch=11,
                        subscribed_topic_names=BOTH,
                        assigned_partitions=with_epochs(mk_assignment((T1, 3), (T2, 6)), 11),
                        partitions_pending_revocation=with_epochs(mk_assignment((T1, 2), (T2, 5)), 11))),
    "testRemainsInUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription": dict(
        member=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                      subscribed_topic_names=["topic2"],
                      assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
                      partitions_pending_revocation=with_epochs(mk_assignment((T1, 1), (T2, 4)), 10)),
        target_epoch=12, target=mk_assignment((T1, 1, 3, 4), (T2, 6, 7)), partition_epoch=-1,
        has_subscription_changed=True, owned=owned((T1, 1, 2, 3), (T2, 4, 5, 6)),
        expected=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=["topic2"],
                        assigned_partitions=with_epochs(mk_assignment((T2, 5, 6)), 10),
                        partitions_pending_revocation=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4)), 10))),
    "testSubscribedTopicNameAndUnresolvedRegularExpression": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=["foo"],
                      subscribed_topic_regex="bar*",
                      assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), 10)),
        target_epoch=10, target=mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), partition_epoch=-1,
        has_subscription_changed=True, resolved={}, owned=owned((FOO, 1, 2, 3), (BAR, 4, 5, 6)),
        expected=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=["foo"], subscribed_topic_regex="bar*",
                        assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3)), 10),
                        partitions_pending_revocation=with_epochs(mk_assignment((BAR, 4, 5, 6)), 10))),
    "testUnresolvedRegularExpression": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=[],
                      subscribed_topic_regex="bar*",
                      assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), 10)),
        target_epoch=10, target=mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), partition_epoch=-1,
        has_subscription_changed=True, resolved={}, owned=owned((FOO, 1, 2, 3), (BAR, 4, 5, 6)),
        expected=member("member", state=UNREV, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=[], subscribed_topic_regex="bar*",
                        assigned_partitions=with_epochs(mk_assignment(), 10),
                        partitions_pending_revocation=with_epochs(mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)),
                                                                  10))),
    "testSubscribedTopicNameAndResolvedRegularExpression": dict(
        member=member("member", state=S, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=["foo"],
                      subscribed_topic_regex="bar*",
                      assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), 10)),
        target_epoch=10, target=mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), partition_epoch=-1,
        has_subscription_changed=True,
        resolved={"bar*": ResolvedRegularExpression(frozenset({"bar"}), 12345, 0)},
        owned=owned((FOO, 1, 2, 3), (BAR, 4, 5, 6)),
        expected=member("member", state=S, member_epoch=10, previous_member_epoch=10,
                        subscribed_topic_names=["foo"], subscribed_topic_regex="bar*",
                        assigned_partitions=with_epochs(mk_assignment((FOO, 1, 2, 3), (BAR, 4, 5, 6)), 10))),
}

# The two @ParameterizedTest @CsvSource tests: (memberEpoch, targetAssignmentEpoch, expectedMemberEpoch,
# hasSubscriptionChanged). The member still holds topic1, which it no longer subscribes to.
def _topic1_unsubscribed(member_epoch: int, target_epoch: int, changed: bool, owned_partitions) -> dict:
    return dict(member=member("member", state=S, member_epoch=member_epoch, previous_member_epoch=member_epoch - 1,
                              subscribed_topic_names=["topic2"],
                              assigned_partitions=with_epochs(mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)),
                                                              member_epoch)),
                target_epoch=target_epoch, target=mk_assignment((T1, 1, 2, 3), (T2, 4, 5, 6)), partition_epoch=-1,
                has_subscription_changed=changed, owned=owned_partitions)


for _e, _t, _x, _c in ((10, 11, 11, False), (10, 11, 11, True), (10, 10, 10, True)):
    CASES[f"testStableToStableWithAssignmentTopicsNoLongerInSubscription{(_e, _t, _x, _c)}"] = dict(
        _topic1_unsubscribed(_e, _t, _c, owned((T2, 4, 5, 6))),
        expected=member("member", state=S, member_epoch=_x, previous_member_epoch=_e,
                        subscribed_topic_names=["topic2"],
                        assigned_partitions=with_epochs(mk_assignment((T2, 4, 5, 6)), _e)))
for _e, _t, _x, _c in ((10, 11, 10, False), (10, 11, 10, True), (10, 10, 10, True)):
    CASES[f"testStableToUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription{(_e, _t, _x, _c)}"] = dict(
        _topic1_unsubscribed(_e, _t, _c, owned((T1, 1, 2, 3), (T2, 4, 5, 6))),
        expected=member("member", state=UNREV, member_epoch=_x, previous_member_epoch=_e,
                        subscribed_topic_names=["topic2"],
                        assigned_partitions=with_epochs(mk_assignment((T2, 4, 5, 6)), _x),
                        partitions_pending_revocation=with_epochs(mk_assignment((T1, 1, 2, 3)), _e)))


def _run(case, owned_override="unset"):
    m = case["member"]
    return reconcile(
        m, target_epoch=case["target_epoch"], target=case["target"],
        current_partition_epoch=epoch_of(case["partition_epoch"]),
        owned_topic_partitions=case.get("owned") if owned_override == "unset" else owned_override,
        subscribed_topic_ids=subscribed_topic_ids(m, case.get("resolved", {}), IMAGE),
        has_subscription_changed=case.get("has_subscription_changed", False))


@pytest.mark.parametrize("name", sorted(CASES))
def test_current_assignment_builder(name):
    case = CASES[name]
    expected = case["member"] if case["expected"] == "unchanged" else case["expected"]
    assert _run(case) == expected


def test_testRemainsInUnrevokedPartitions():
    m = member("member", state=UNREV, member_epoch=10, previous_member_epoch=10, subscribed_topic_names=BOTH,
               assigned_partitions=with_epochs(mk_assignment((T1, 2, 3), (T2, 5, 6)), 10),
               partitions_pending_revocation=with_epochs(mk_assignment((T1, 1), (T2, 4)), 10))
    case = dict(member=m, target_epoch=12, target=mk_assignment((T1, 3), (T2, 6)), partition_epoch=-1)
    # No owned partitions reported, or still reporting one pending revocation (T1-1, then T2-4): no progress.
    for reported in (None, owned((T1, 1, 2, 3), (T2, 5, 6)), owned((T1, 2, 3), (T2, 4, 5, 6))):
        assert _run(case, reported) == m


def test_testUnknownState():
    m = member("member", state=UNKNOWN, member_epoch=11, previous_member_epoch=11, subscribed_topic_names=BOTH,
               assigned_partitions=with_epochs(mk_assignment((T1, 3), (T2, 6)), 11),
               partitions_pending_revocation=with_epochs(mk_assignment((T1, 2), (T2, 5)), 11))
    target = mk_assignment((T1, 3), (T2, 6))
    # First the member is fenced (no owned partitions reported), ...
    with pytest.raises(ApiError) as e:
        _run(dict(member=m, target_epoch=12, target=target, partition_epoch=10))
    assert e.value == ApiError(ErrorCode.FENCED_MEMBER_EPOCH, UNKNOWN_STATE_MESSAGE)
    # ... then it rejoins owning nothing and is reconciled from scratch.
    assert _run(dict(member=m, target_epoch=12, target=target, partition_epoch=11, owned=[])) == member(
        "member", state=S, member_epoch=12, previous_member_epoch=11, subscribed_topic_names=BOTH,
        assigned_partitions=with_epochs(mk_assignment((T1, 3), (T2, 6)), 11))


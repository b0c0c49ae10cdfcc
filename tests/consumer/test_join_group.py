"""JoinGroup (AbstractCoordinator.sendJoinGroupRequest / JoinGroupResponseHandler, ConsumerCoordinator.metadata and
onLeaderElected): the request, follower and leader paths, KIP-394's MEMBER_ID_REQUIRED, each error code, static
membership (KIP-345, KIP-814), the rejoin reasons (KIP-800) and what makes a member rejoin
(rejoinNeededOrPending: metadata and subscription changes). Cases from AbstractCoordinatorTest /
ConsumerCoordinatorTest, expectations from Kafka's handlers."""

from __future__ import annotations

import pytest

from _coordinator_harness import (GROUP, T1, T2, Harness, find_coordinator_response, join_group_response,
                                  subscription_bytes, sync_group_response, tp)
from consumer import outputs as out
from consumer._state import MemberState
from consumer.errors import ApiException, IllegalStateException, UnsupportedVersionException
from protocol.api import ApiKey
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import ErrorCode as E


# --- normal join ------------------------------------------------------------------------------------------
def test_normal_join_group_follower():
    h = Harness(config={"partition.assignment.strategy": ["range", "cooperative-sticky"]})
    h.discover()
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    b = join.body
    assert join.to_coordinator and join.node_id == 1
    assert (b.group_id, b.member_id, b.session_timeout_ms, b.rebalance_timeout_ms, b.protocol_type) == (
        GROUP, "", 10_000, 60_000, "consumer")
    assert join.timeout_ms == 65_000  # max(request.timeout.ms, rebalance timeout + 5 s)
    assert [p.name for p in b.protocols] == ["range", "cooperative-sticky"]
    _, sub = decode_subscription(b.protocols[0].metadata)
    assert sub.topics == [T1] and sub.owned_partitions == [] and sub.generation_id == -1
    assert h.c.state == MemberState.PREPARING_REBALANCE
    assert not h.has(ApiKey.HEARTBEAT)

    h.respond(join, join_group_response(1, "consumer", "leader"))
    assert h.c.state == MemberState.COMPLETING_REBALANCE
    sync = h.take(ApiKey.SYNC_GROUP)
    assert (sync.body.generation_id, sync.body.member_id, sync.body.protocol_name, sync.body.assignments) == (
        1, "consumer", "range", [])
    h.respond(sync, sync_group_response([(T1, 0)]))
    assert h.c.state == MemberState.STABLE
    assert h.callbacks() == []  # callbacks run on the application thread: next poll
    h.poll()
    # first join: generation was -1, nothing owned -> no revoke/lost; assigned always invoked
    assert h.callbacks() == [("assigned", (tp(T1, 0),))]
    assert h.c.assignment == (tp(T1, 0),)
    assert h.c.generation.generation_id == 1 and h.c.member_id == "consumer"


def test_normal_join_group_leader_runs_the_elected_assignor():
    h = Harness(topics=[T1, T2], metadata={T1: 2, T2: 1})
    h.discover()
    h.poll()
    members = [("leader", subscription_bytes([T1, T2])), ("other", subscription_bytes([T1]))]
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "leader", "leader", "range", members))
    sync = h.take(ApiKey.SYNC_GROUP)
    got = {a.member_id: decode_assignment(a.assignment)[1].assigned_partitions for a in sync.body.assignments}
    # RangeAssignor: topic1 [0,1] over (leader, other) -> 1 each; topic2 [0] -> leader only
    assert got == {"leader": [(T1, [0]), (T2, [0])], "other": [(T1, [1])]}
    assert h.c.is_leader and h.c.group_subscription == {T1, T2}
    computed = h.events(out.AssignmentComputed)[0]
    assert computed.assignments["other"] == (tp(T1, 1),)
    h.respond(sync, sync_group_response([(T1, 0), (T2, 0)]))
    h.poll()
    assert h.callbacks() == [("assigned", (tp(T1, 0), tp(T2, 0)))]


def test_member_id_required_rejoins_at_once_with_the_given_id():
    # KIP-394 (JoinGroup v4+): the second JoinGroup carries the member id, in the same poll
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(-1, "consumer-1-abc", "", error=E.MEMBER_ID_REQUIRED))
    assert h.c.generation.member_id == "consumer-1-abc" and h.c.generation.generation_id == -1
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.body.member_id == "consumer-1-abc"
    assert join.body.reason.startswith("need to re-join with the given member-id")


def _join_with_member_id(h, member="m-1"):
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(-1, member, "", error=E.MEMBER_ID_REQUIRED))
    h.poll()
    return h.take(ApiKey.JOIN_GROUP)


# (error, next JoinGroup: "now" | "backoff" | "rediscover" | "fatal", member id of the next JoinGroup)
JOIN_ERRORS = [
    (E.UNKNOWN_MEMBER_ID, "now", ""),
    (E.REBALANCE_IN_PROGRESS, "now", "m-1"),
    (E.COORDINATOR_LOAD_IN_PROGRESS, "backoff", "m-1"),
    (E.COORDINATOR_NOT_AVAILABLE, "rediscover", "m-1"),
    (E.NOT_COORDINATOR, "rediscover", "m-1"),
    (E.INCONSISTENT_GROUP_PROTOCOL, "fatal", None),
    (E.INVALID_SESSION_TIMEOUT, "fatal", None),
    (E.INVALID_GROUP_ID, "fatal", None),
    (E.GROUP_AUTHORIZATION_FAILED, "fatal", None),
    (E.GROUP_MAX_SIZE_REACHED, "fatal", None),
    (E.FENCED_INSTANCE_ID, "fatal", None),
    (E.UNSUPPORTED_VERSION, "fatal", None),
    (E.UNKNOWN_SERVER_ERROR, "fatal", None),
]


@pytest.mark.parametrize("error,then,member", JOIN_ERRORS)
def test_join_group_errors(error, then, member):
    h = Harness()
    join = _join_with_member_id(h)
    h.respond(join, join_group_response(-1, "m-1", "", error=error))
    if then == "fatal":
        with pytest.raises(ApiException) as info:
            h.poll()
        assert info.value.error == error
        return
    h.poll()
    if then == "now":
        nxt = h.take(ApiKey.JOIN_GROUP)
    elif then == "backoff":
        assert not h.has(ApiKey.JOIN_GROUP) and h.c.coordinator is not None
        h.poll(advance=99)
        assert not h.has(ApiKey.JOIN_GROUP)
        h.poll(advance=1)
        nxt = h.take(ApiKey.JOIN_GROUP)
    else:
        assert h.c.coordinator is None
        assert out.CloseConnection(1, f"error response {error.name}") in h.outputs
        h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response(node=2))
        h.poll(advance=100)
        nxt = h.take(ApiKey.JOIN_GROUP)
        assert nxt.node_id == 2
    assert nxt.body.member_id == member


def test_join_response_with_other_protocol_type_is_inconsistent():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "c", "c", protocol_type="connect"))
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == E.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize("error,reason", [
    (E.UNKNOWN_MEMBER_ID, "rebalance failed due to UnknownMemberIdException"),
    (E.REBALANCE_IN_PROGRESS, "rebalance failed due to RebalanceInProgressException"),
    (E.GROUP_MAX_SIZE_REACHED, "rebalance failed due to GroupMaxSizeReachedException"),
    (E.COORDINATOR_LOAD_IN_PROGRESS, "rebalance failed due to CoordinatorLoadInProgressException"),
])
def test_rejoin_reason_names_the_failure(error, reason):
    # AbstractCoordinatorTest.testRejoinReason (KIP-800: JoinGroup v8+ carries the reason)
    h = Harness()
    join = _join_with_member_id(h)
    h.respond(join, join_group_response(-1, "m-1", "", error=error))
    try:
        h.poll()
    except ApiException:
        pass
    h.poll(advance=100)
    assert h.take(ApiKey.JOIN_GROUP).body.reason == reason


def test_static_member_join_and_old_broker():
    h = Harness(config={"group.instance.id": "instance-1"})
    h.discover()
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.body.group_instance_id == "instance-1"
    h2 = Harness(config={"group.instance.id": "instance-1"})
    h2.c.set_api_versions({ApiKey.FIND_COORDINATOR: (0, 4), ApiKey.JOIN_GROUP: (0, 4)})
    h2.discover()
    with pytest.raises(UnsupportedVersionException, match="group.instance.id"):
        h2.poll()


def test_static_leader_skip_assignment_sends_no_assignments():
    # KIP-814: a returning static leader on JoinGroup v9 does not run the assignor
    h = Harness(config={"group.instance.id": "instance-1"})
    h.discover()
    h.poll()
    members = [("leader", subscription_bytes([T1]))]
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(3, "leader", "leader", members=members,
                                                             skip_assignment=True))
    sync = h.take(ApiKey.SYNC_GROUP)
    assert sync.body.assignments == [] and sync.body.group_instance_id == "instance-1"
    assert not h.events(out.AssignmentComputed)
    h.respond(sync, sync_group_response([(T1, 0), (T1, 1)]))
    h.poll()
    assert h.callbacks() == [("assigned", (tp(T1, 0), tp(T1, 1)))]


def test_leader_with_invalid_protocol_fails():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "c", "c", "roundrobin",
                                                             [("c", subscription_bytes([T1]))]))
    with pytest.raises(IllegalStateException, match="invalid assignment protocol"):
        h.poll()


def test_cooperative_assignor_that_moves_owned_partitions_is_rejected():
    # ConsumerCoordinator.validateCooperativeAssignment (custom COOPERATIVE assignors only)
    h = Harness(config={"partition.assignment.strategy": ["_coordinator_harness:BadCooperativeAssignor"]})
    assert h.c.protocol.value == "COOPERATIVE"
    h.discover()
    h.poll()
    members = [("a", subscription_bytes([T1], owned=[(T1, 0)], generation=1)),
               ("b", subscription_bytes([T1], owned=[(T1, 1)], generation=1))]
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(2, "a", "a", "bad-cooperative", members))
    with pytest.raises(IllegalStateException, match="COOPERATIVE protocol"):
        h.poll()


def test_leader_rejoins_when_partition_count_changes():
    # ConsumerCoordinatorTest.testRebalanceWithMetadataChange: only the leader watches metadata
    h = Harness(metadata={T1: 1})
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "leader", "leader", "range",
                                                             [("leader", subscription_bytes([T1]))]))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)]))
    h.poll()
    h.pending.clear()
    h.poll()
    assert not h.has(ApiKey.JOIN_GROUP)
    h.c.set_metadata({T1: 2})
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.body.member_id == "leader" and join.body.reason == "cached metadata has changed"


def test_follower_ignores_metadata_changes():
    h = Harness(metadata={T1: 1})
    h.join(assigned=[(T1, 0)])
    h.pending.clear()
    h.c.set_metadata({T1: 4})
    h.poll()
    assert not h.has(ApiKey.JOIN_GROUP)


def test_subscription_change_triggers_rejoin():
    h = Harness()
    h.join(assigned=[(T1, 0)])
    h.pending.clear()
    h.c.subscribe([T1, T2])
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    _, sub = decode_subscription(join.body.protocols[0].metadata)
    assert sub.topics == [T1, T2] and join.body.reason == "subscription has changed"

"""Coordinator discovery, JoinGroup/SyncGroup and their error paths (AbstractCoordinatorTest /
ConsumerCoordinatorTest cases, expectations from Kafka's handlers)."""

from __future__ import annotations

import pytest

from _coordinator_harness import (GROUP, T1, T2, Harness, find_coordinator_response, heartbeat_response,
                                  join_group_response, offset_fetch_response, subscription_bytes,
                                  sync_group_response, tp)
from consumer import outputs as out
from consumer.coordinator import DISCONNECTED, MemberState
from consumer.errors import ApiException, IllegalStateException, UnsupportedVersionException
from protocol.api import ApiKey
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import ErrorCode as E


# --- discovery --------------------------------------------------------------------------------------------
def test_find_coordinator_request_and_discovery():
    h = Harness()
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    assert req.node_id is None and not req.to_coordinator  # any broker (leastLoadedNode)
    assert req.api_version == 4 and req.body.coordinator_keys == [GROUP] and req.body.key_type == 0
    h.respond(req, find_coordinator_response(node=2))
    assert h.c.coordinator == out.Node(2, "localhost", 9094)
    assert h.events(out.CoordinatorDiscovered)


def test_find_coordinator_v3_single_key():
    h = Harness()
    h.c.set_api_versions({ApiKey.FIND_COORDINATOR: (0, 3), ApiKey.JOIN_GROUP: (0, 9)})
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    assert req.api_version == 3 and req.body.key == GROUP
    h.respond(req, find_coordinator_response(node=3, v4=False))
    assert h.c.coordinator.node_id == 3


def test_find_coordinator_retries_with_exponential_backoff():
    # ensureCoordinatorReady: retriable errors back off retry.backoff.ms * 2^n up to retry.backoff.max.ms
    h = Harness()
    waits = []
    for _ in range(6):
        h.poll()
        req = h.take(ApiKey.FIND_COORDINATOR)
        h.respond(req, find_coordinator_response(E.COORDINATOR_NOT_AVAILABLE))
        start = h.now
        while not h.has(ApiKey.FIND_COORDINATOR):
            h.poll(advance=50)
        waits.append(h.now - start)
    assert waits == [100, 200, 400, 800, 1000, 1000]


def test_find_coordinator_group_authorization_failure_is_fatal():
    h = Harness()
    h.poll()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response(E.GROUP_AUTHORIZATION_FAILED))
    with pytest.raises(ApiException) as info:
        h.poll(advance=1000)
    assert info.value.error == E.GROUP_AUTHORIZATION_FAILED


def test_find_coordinator_disconnect_retries():
    h = Harness()
    h.poll()
    req = h.take(ApiKey.FIND_COORDINATOR)
    h.c.on_response(req.handle, DISCONNECTED, h.now)
    h.poll(advance=100)
    assert h.has(ApiKey.FIND_COORDINATOR)


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


def test_sync_response_with_other_protocol_name_is_inconsistent():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "c", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T1, 0)], protocol_name="roundrobin"))
    with pytest.raises(ApiException) as info:
        h.poll()
    assert info.value.error == E.INCONSISTENT_GROUP_PROTOCOL


# (error, next: "now" | "rediscover" | "fatal", member id of next JoinGroup, generation kept in subscription)
SYNC_ERRORS = [
    (E.REBALANCE_IN_PROGRESS, "now", "consumer"),
    (E.UNKNOWN_MEMBER_ID, "now", ""),
    (E.ILLEGAL_GENERATION, "now", "consumer"),
    (E.COORDINATOR_NOT_AVAILABLE, "rediscover", "consumer"),
    (E.NOT_COORDINATOR, "rediscover", "consumer"),
    (E.FENCED_INSTANCE_ID, "fatal", None),
    (E.GROUP_AUTHORIZATION_FAILED, "fatal", None),
    (E.UNKNOWN_SERVER_ERROR, "fatal", None),
]


@pytest.mark.parametrize("error,then,member", SYNC_ERRORS)
def test_sync_group_errors(error, then, member):
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(error=error))
    if then == "fatal":
        with pytest.raises(ApiException) as info:
            h.poll()
        assert info.value.error == error
        return
    if then == "rediscover":
        assert h.c.coordinator is None
        h.poll()
        h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
        h.poll(advance=100)
    else:
        h.poll()
    nxt = h.take(ApiKey.JOIN_GROUP)
    assert nxt.body.member_id == member
    assert h.c.state == MemberState.PREPARING_REBALANCE


def test_sync_group_disconnect_marks_coordinator_unknown_and_rejoins():
    # AbstractCoordinatorTest.testSyncGroupRequestWithDisconnect-style: member id kept
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.take(ApiKey.SYNC_GROUP)
    h.c.on_disconnect(1, h.now)
    h.collect()
    assert h.c.coordinator is None
    h.poll()
    h.respond(h.take(ApiKey.FIND_COORDINATOR), find_coordinator_response())
    h.poll(advance=100)
    assert h.take(ApiKey.JOIN_GROUP).body.member_id == "consumer"


def test_join_group_request_timeout_is_a_disconnect():
    h = Harness()
    h.discover()
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    h.tick(advance=join.timeout_ms)
    assert h.c.coordinator is None
    assert any(isinstance(o, out.CloseConnection) for o in h.outputs)
    h.c.on_response(join.handle, join_group_response(1, "late", "late"), h.now)  # too late: ignored
    assert h.c.generation.member_id == ""


def test_empty_assignment_bytes_are_fatal_as_in_kafka():
    # ConsumerCoordinator.onJoinComplete: fewer than 2 bytes -> IllegalStateException
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response(raw=b""))
    with pytest.raises(IllegalStateException, match="insufficient bytes"):
        h.poll()


def test_assignment_not_matching_subscription_requests_rejoin_without_callbacks():
    h = Harness()
    h.discover()
    h.poll()
    h.respond(h.take(ApiKey.JOIN_GROUP), join_group_response(1, "consumer", "leader"))
    h.respond(h.take(ApiKey.SYNC_GROUP), sync_group_response([(T2, 0)]))
    h.poll()
    # no assigned callback; the rejoin's onJoinPrepare (EAGER, valid generation) revokes the empty set
    assert h.callbacks() == [("revoked", ())]
    assert h.take(ApiKey.JOIN_GROUP).body.reason == "received assignment does not match the current subscription"


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


def test_stale_join_response_after_leaving_is_retried():
    # JoinGroupResponseHandler: state is no longer PREPARING_REBALANCE -> UnjoinedGroupException (retriable).
    # The member left the join meanwhile: a heartbeat of its old generation, answered UNKNOWN_MEMBER_ID while
    # the JoinGroup was in flight, reset it (the heartbeat thread's resetStateAndGeneration).
    h = Harness()
    h.join(assigned=[(T1, 0)])
    h.respond(h.take(ApiKey.OFFSET_FETCH), offset_fetch_response({(T1, 0): 5}))
    h.tick(advance=5_000)
    hb = h.take(ApiKey.HEARTBEAT)
    h.c.request_rejoin("test")
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert h.c.state == MemberState.PREPARING_REBALANCE
    h.respond(hb, heartbeat_response(E.UNKNOWN_MEMBER_ID))
    assert h.c.state == MemberState.UNJOINED
    h.respond(join, join_group_response(2, "consumer", "leader"))
    assert h.c.state == MemberState.UNJOINED
    assert not h.has(ApiKey.SYNC_GROUP)
    h.poll()
    assert not h.has(ApiKey.JOIN_GROUP)
    h.poll(advance=100)
    assert h.has(ApiKey.JOIN_GROUP)


def test_old_broker_versions_full_walk():
    # a broker advertising old maxima (aiokafka-era): every request is built in its old layout
    from protocol.messages import LeaveGroupResponse, OffsetCommitResponse, OffsetFetchResponse
    h = Harness(config={"enable.auto.commit": True})
    h.c.set_api_versions({ApiKey.FIND_COORDINATOR: (0, 1), ApiKey.JOIN_GROUP: (0, 2), ApiKey.SYNC_GROUP: (0, 1),
                          ApiKey.HEARTBEAT: (0, 1), ApiKey.LEAVE_GROUP: (0, 1), ApiKey.OFFSET_COMMIT: (2, 3),
                          ApiKey.OFFSET_FETCH: (1, 3)})
    h.poll()
    find = h.take(ApiKey.FIND_COORDINATOR)
    assert find.api_version == 1 and find.body.key == GROUP
    h.respond(find, find_coordinator_response(v4=False))
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    assert join.api_version == 2 and join.body.member_id == ""
    h.respond(join, join_group_response(1, "consumer", "leader", protocol_type=None))
    sync = h.take(ApiKey.SYNC_GROUP)
    assert sync.api_version == 1
    h.respond(sync, sync_group_response([(T1, 0)], protocol_name=None))
    h.poll()
    fetch = h.take(ApiKey.OFFSET_FETCH)
    assert fetch.api_version == 3 and fetch.body.group_id == GROUP and fetch.body.topics[0].partition_indexes == [0]
    h.respond(fetch, OffsetFetchResponse(error_code=0, topics=[OffsetFetchResponse.Topic(name=T1, partitions=[
        OffsetFetchResponse.Topic.Partition(partition_index=0, committed_offset=4, metadata="", error_code=0)])]))
    assert h.poll().positions == {tp(T1, 0): 4}
    h.poll(advance=2_000)
    commit = h.take(ApiKey.OFFSET_COMMIT)
    assert commit.api_version == 3 and commit.body.generation_id_or_member_epoch == 1
    h.respond(commit, OffsetCommitResponse(topics=[OffsetCommitResponse.Topic(name=T1, partitions=[
        OffsetCommitResponse.Topic.Partition(partition_index=0, error_code=0)])]))
    h.c.close(h.now)
    h.collect()
    commit = h.take(ApiKey.OFFSET_COMMIT)
    h.respond(commit, OffsetCommitResponse(topics=[OffsetCommitResponse.Topic(name=T1, partitions=[
        OffsetCommitResponse.Topic.Partition(partition_index=0, error_code=0)])]))
    leave = h.take(ApiKey.LEAVE_GROUP)
    assert leave.api_version == 1 and leave.body.member_id == "consumer"
    h.respond(leave, LeaveGroupResponse(error_code=0))
    assert h.c.closed


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


def test_join_group_timeout_is_rebalance_timeout_plus_lapse():
    # AbstractCoordinatorTest.testJoinGroupRequestTimeout: not failed after request.timeout.ms, failed after
    # rebalance timeout + 5 s
    h = Harness()
    h.discover()
    h.poll()
    join = h.take(ApiKey.JOIN_GROUP)
    h.tick(advance=30_001)
    assert h.c.coordinator is not None and join.handle in h.c.in_flight
    h.tick(advance=60_000 + 5_000 - 30_001)
    assert join.handle not in h.c.in_flight and h.c.coordinator is None

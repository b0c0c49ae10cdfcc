"""Request tracking (consumer/network.py): version negotiation (ApiVersions.latestUsableVersion), requests built
at old versions, request timeouts (NetworkClient.handleTimedOutRequests; JoinGroup's is the rebalance timeout
+ 5 s), and per-core request handles."""

from __future__ import annotations

import pytest

from _coordinator_harness import (GROUP, T1, Harness, find_coordinator_response, join_group_response,
                                  sync_group_response, tp)
from consumer import outputs as out
from consumer.coordinator import ConsumerCoordinator
from consumer.errors import UnsupportedVersionException
from protocol.api import ApiKey


@pytest.mark.parametrize("api,broker,expected", [
    (ApiKey.JOIN_GROUP, (0, 9), 9),
    (ApiKey.JOIN_GROUP, (0, 5), 5),
    (ApiKey.JOIN_GROUP, (0, 12), 9),       # never above the client's own maximum
    (ApiKey.SYNC_GROUP, (0, 7), 5),
    (ApiKey.HEARTBEAT, (0, 1), 1),
    (ApiKey.LEAVE_GROUP, (0, 2), 2),
    (ApiKey.FIND_COORDINATOR, (0, 6), 4),
    (ApiKey.OFFSET_COMMIT, (2, 8), 8),
    (ApiKey.OFFSET_FETCH, (1, 3), 3),
])
def test_version_negotiation_picks_the_highest_common_version(api, broker, expected):
    c = ConsumerCoordinator({"group.id": "g"})
    c.set_api_versions({api: broker})
    assert c.api_version(api) == expected


def test_version_negotiation_without_overlap_fails():
    c = ConsumerCoordinator({"group.id": "g"})
    c.set_api_versions({ApiKey.JOIN_GROUP: (10, 12)})
    with pytest.raises(UnsupportedVersionException):
        c.api_version(ApiKey.JOIN_GROUP)
    with pytest.raises(UnsupportedVersionException):
        c.api_version(ApiKey.SYNC_GROUP)  # not advertised at all


def test_defaults_to_client_maxima_without_api_versions():
    c = ConsumerCoordinator({"group.id": "g"})
    assert [c.api_version(k) for k in (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP,
                                       ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT,
                                       ApiKey.OFFSET_FETCH)] == [4, 9, 5, 4, 5, 9, 9]


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


def test_request_handles_are_each_cores_own():
    # like Kafka's correlation ids (one counter per NetworkClient): 1, 2, 3, ... per consumer, not shared
    a, b = Harness(), Harness()
    a.poll()
    b.poll()
    find_a, find_b = a.take(ApiKey.FIND_COORDINATOR), b.take(ApiKey.FIND_COORDINATOR)
    assert find_a.handle == find_b.handle == 1
    a.respond(find_a, find_coordinator_response())
    a.poll()
    assert a.take(ApiKey.JOIN_GROUP).handle == 2

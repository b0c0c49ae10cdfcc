"""protocol/error_responses.py: each API's error answer has Kafka's shape (``<Api>Request.getErrorResponse`` in
apache/kafka ``clients/.../common/requests``) and encodes at every version, also for requests that name groups,
topics and partitions (an empty request would leave the per-item builders unexercised)."""

from __future__ import annotations

import pytest

import protocol.messages as M
from protocol.api import APIS, ApiKey
from protocol.error_responses import error_response, join_group_error, shape_join_group_response
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_response

E = ErrorCode


def requests() -> dict[int, object]:
    """One request per API that names several items wherever the request can."""
    return {
        ApiKey.JOIN_GROUP: M.JoinGroupRequest(group_id="g", session_timeout_ms=10_000, member_id="m-1",
                                              protocol_type="consumer", protocols=[]),
        ApiKey.SYNC_GROUP: M.SyncGroupRequest(group_id="g", generation_id=1, member_id="m-1", assignments=[]),
        ApiKey.HEARTBEAT: M.HeartbeatRequest(group_id="g", generation_id=1, member_id="m-1"),
        ApiKey.LEAVE_GROUP: M.LeaveGroupRequest(group_id="g", member_id="m-1", members=[
            M.LeaveGroupRequest.MemberIdentity(member_id="m-1")]),
        ApiKey.OFFSET_COMMIT: M.OffsetCommitRequest(group_id="g", member_id="m-1", topics=[
            M.OffsetCommitRequest.Topic(name="t", partitions=[
                M.OffsetCommitRequest.Topic.Partition(partition_index=i, committed_offset=5,
                                                      committed_metadata="") for i in (0, 2)])]),
        ApiKey.OFFSET_FETCH: M.OffsetFetchRequest(
            group_id="g", topics=[M.OffsetFetchRequest.Topic(name="t", partition_indexes=[0, 2])],
            groups=[M.OffsetFetchRequest.Group(group_id=g, topics=None) for g in ("g", "h")]),
        ApiKey.DESCRIBE_GROUPS: M.DescribeGroupsRequest(groups=["g", "h"]),
        ApiKey.LIST_GROUPS: M.ListGroupsRequest(),
        ApiKey.DELETE_GROUPS: M.DeleteGroupsRequest(groups_names=["g", "h"]),
        ApiKey.OFFSET_DELETE: M.OffsetDeleteRequest(group_id="g", topics=[]),
        ApiKey.FIND_COORDINATOR: M.FindCoordinatorRequest(key="g", coordinator_keys=["g", "h"]),
        ApiKey.API_VERSIONS: M.ApiVersionsRequest(),
        ApiKey.PRODUCE: M.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[M.ProduceRequest.Topic(
            name="t", partition_data=[M.ProduceRequest.Topic.Partition(index=1, records=None)])]),
        ApiKey.FETCH: M.FetchRequest(max_wait_ms=0, min_bytes=1, topics=[M.FetchRequest.Topic(topic="t", partitions=[
            M.FetchRequest.Topic.Partition(partition=1, fetch_offset=0, partition_max_bytes=1)])]),
        ApiKey.LIST_OFFSETS: M.ListOffsetsRequest(replica_id=-1, topics=[M.ListOffsetsRequest.Topic(
            name="t", partitions=[M.ListOffsetsRequest.Topic.Partition(partition_index=1, timestamp=-1)])]),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: M.OffsetForLeaderEpochRequest(topics=[M.OffsetForLeaderEpochRequest.Topic(
            topic="t", partitions=[M.OffsetForLeaderEpochRequest.Topic.Partition(partition=1, leader_epoch=0)])]),
        ApiKey.METADATA: M.MetadataRequest(topics=[M.MetadataRequest.Topic(name="t")]),
        ApiKey.INIT_PRODUCER_ID: M.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000),
        ApiKey.CONSUMER_GROUP_HEARTBEAT: M.ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-1",
                                                                        member_epoch=0),
        ApiKey.CONSUMER_GROUP_DESCRIBE: M.ConsumerGroupDescribeRequest(group_ids=["g", "h"]),
        ApiKey.CREATE_TOPICS: M.CreateTopicsRequest(topics=[M.CreateTopicsRequest.Topic(
            name=n, num_partitions=3, replication_factor=1, assignments=[], configs=[]) for n in ("t", "u")]),
        ApiKey.DELETE_TOPICS: M.DeleteTopicsRequest(topic_names=["t", "u"], timeout_ms=1000, topics=[
            M.DeleteTopicsRequest.Topic(name=n) for n in ("t", "u")]),
        ApiKey.CREATE_PARTITIONS: M.CreatePartitionsRequest(topics=[M.CreatePartitionsRequest.Topic(
            name=n, count=4, assignments=None) for n in ("t", "u")], timeout_ms=1000, validate_only=False),
        ApiKey.DESCRIBE_CLUSTER: M.DescribeClusterRequest(include_cluster_authorized_operations=False),
        ApiKey.DESCRIBE_CONFIGS: M.DescribeConfigsRequest(resources=[M.DescribeConfigsRequest.Resource(
            resource_type=t, resource_name=n, configuration_keys=None) for t, n in ((2, "t"), (4, "0"))]),
    }


def test_every_api_has_a_request_here():
    assert set(requests()) == set(APIS)


@pytest.mark.parametrize("key", sorted(APIS))
def test_error_response_encodes_at_every_version(key):
    api = APIS[key]
    req = requests()[key]
    for v in range(api.min_version, api.max_version + 1):
        resp = error_response(key, v, req, E.NOT_COORDINATOR)
        frame = encode_response(key, v, 7, resp)
        corr, decoded = decode_response(key, v, frame[4:])
        assert corr == 7


def test_join_group_get_error_response_has_no_member_id_and_per_version_protocol_name():
    # JoinGroupRequest.getErrorResponse: member id and leader UNKNOWN_MEMBER_ID (""), generation -1, no members;
    # protocol name null from v7, "" before.
    req = requests()[ApiKey.JOIN_GROUP]
    for v, name in ((6, ""), (7, None)):
        r = error_response(ApiKey.JOIN_GROUP, v, req, E.REBALANCE_IN_PROGRESS)
        assert (r.error_code, r.member_id, r.leader, r.generation_id, r.members, r.protocol_name) == \
            (E.REBALANCE_IN_PROGRESS, "", "", -1, [], name)
    # The coordinator's own validation errors echo the member id (GroupCoordinatorService.joinGroup).
    assert join_group_error(E.INVALID_SESSION_TIMEOUT, "m-1", 9).member_id == "m-1"
    assert shape_join_group_response(M.JoinGroupResponse(protocol_name=""), 7).protocol_name is None


def test_per_item_errors():
    reqs = requests()
    r = error_response(ApiKey.DESCRIBE_GROUPS, 5, reqs[ApiKey.DESCRIBE_GROUPS], E.NOT_COORDINATOR)
    # DescribeGroupsResponse.groupError: UNKNOWN_STATE, UNKNOWN_PROTOCOL_TYPE and UNKNOWN_PROTOCOL are "".
    assert [(g.group_id, g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.members)
            for g in r.groups] == [("g", 16, "", "", "", []), ("h", 16, "", "", "", [])]
    r = error_response(ApiKey.DELETE_GROUPS, 2, reqs[ApiKey.DELETE_GROUPS], E.NOT_COORDINATOR)
    assert [(x.group_id, x.error_code) for x in r.results] == [("g", 16), ("h", 16)]
    r = error_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, reqs[ApiKey.CONSUMER_GROUP_DESCRIBE], E.NOT_COORDINATOR)
    assert [(g.group_id, g.error_code) for g in r.groups] == [("g", 16), ("h", 16)]
    r = error_response(ApiKey.OFFSET_COMMIT, 9, reqs[ApiKey.OFFSET_COMMIT], E.NOT_COORDINATOR)
    assert [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions] == \
        [("t", 0, 16), ("t", 2, 16)]


def test_offset_fetch_error_by_version():
    req = requests()[ApiKey.OFFSET_FETCH]
    # v0-1: no top-level error, each requested partition carries it with INVALID_OFFSET (-1).
    r = error_response(ApiKey.OFFSET_FETCH, 1, req, E.NOT_COORDINATOR)
    assert [(t.name, p.partition_index, p.committed_offset, p.error_code) for t in r.topics for p in t.partitions] \
        == [("t", 0, -1, 16), ("t", 2, -1, 16)]
    r = error_response(ApiKey.OFFSET_FETCH, 2, req, E.NOT_COORDINATOR)
    assert (r.error_code, r.topics) == (16, [])
    r = error_response(ApiKey.OFFSET_FETCH, 8, req, E.NOT_COORDINATOR)
    assert [(g.group_id, g.error_code, g.topics) for g in r.groups] == [("g", 16, []), ("h", 16, [])]


def test_find_coordinator_error_carries_the_errors_message_and_no_node():
    req = requests()[ApiKey.FIND_COORDINATOR]
    r = error_response(ApiKey.FIND_COORDINATOR, 3, req, E.COORDINATOR_NOT_AVAILABLE)
    assert (r.error_code, r.node_id, r.host, r.port) == (15, -1, "", -1)
    assert r.error_message == "The coordinator is not available."
    r = error_response(ApiKey.FIND_COORDINATOR, 4, req, E.COORDINATOR_NOT_AVAILABLE)
    assert [(c.key, c.error_code, c.node_id, c.error_message) for c in r.coordinators] == \
        [("g", 15, -1, "The coordinator is not available."), ("h", 15, -1, "The coordinator is not available.")]


def test_api_versions_unsupported_version_lists_its_own_range():
    # KIP-511: an UNSUPPORTED_VERSION answer tells the client which ApiVersions versions the broker speaks.
    api = APIS[ApiKey.API_VERSIONS]
    r = error_response(ApiKey.API_VERSIONS, 0, M.ApiVersionsRequest(), E.UNSUPPORTED_VERSION)
    assert [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == [(18, api.min_version,
                                                                                api.max_version)]
    assert error_response(ApiKey.API_VERSIONS, 0, M.ApiVersionsRequest(), E.UNKNOWN_SERVER_ERROR).api_keys == []


def test_admin_error_responses_name_every_item_with_the_default_message():
    # CreateTopicsRequest / CreatePartitionsRequest / DescribeConfigsRequest.getErrorResponse: every requested item
    # with the error and ApiError's message (the error's default); DeleteTopics names (v<6 from topic_names).
    reqs = requests()
    ct = error_response(ApiKey.CREATE_TOPICS, 7, reqs[ApiKey.CREATE_TOPICS], E.NOT_CONTROLLER)
    assert [(t.name, t.error_code, t.error_message) for t in ct.topics] == \
        [(n, E.NOT_CONTROLLER, E.NOT_CONTROLLER.message) for n in ("t", "u")]
    dt = error_response(ApiKey.DELETE_TOPICS, 5, reqs[ApiKey.DELETE_TOPICS], E.NOT_CONTROLLER)
    assert [(r.name, r.error_code) for r in dt.responses] == [("t", E.NOT_CONTROLLER), ("u", E.NOT_CONTROLLER)]
    dc = error_response(ApiKey.DESCRIBE_CONFIGS, 4, reqs[ApiKey.DESCRIBE_CONFIGS], E.NOT_CONTROLLER)
    assert [(r.resource_type, r.resource_name, r.error_code) for r in dc.results] == \
        [(2, "t", E.NOT_CONTROLLER), (4, "0", E.NOT_CONTROLLER)]

"""Error responses, one builder per API: Kafka's ``AbstractRequest.getErrorResponse`` (and the few shapes Kafka's
response classes fix per version).

Whoever fails a request -- the coordinator (not the coordinator, still loading, a validation error), the broker's
fault injection (``kgroup ctl fail-next``), a handler that raised -- answers it with the response built here, so
each API's error shape exists once:

=====================  ===============================================================================================
JoinGroup              generation -1, leader ``""``, no members, member id ``""`` (the coordinator's own validation
                       errors echo the request's member id: ``GroupCoordinatorService.joinGroup``); protocol name
                       null from v7, ``""`` below (``JoinGroupResponse(data, version)``), protocol type null
SyncGroup              empty assignment, protocol type and name null
Heartbeat, LeaveGroup  the top-level error only
OffsetCommit           the error on every requested partition (``OffsetCommitRequest.getErrorResponse``)
OffsetFetch            v0-1: every requested partition with offset -1 and the error; v2-7: the top-level error and
                       no topics; v8+: the error on every requested group
DescribeGroups         every requested group with the error, state/protocol ``""``, no members
                       (``DescribeGroupsResponse.groupError``)
ListGroups             the error and no groups
DeleteGroups           every requested group with the error
OffsetDelete           the top-level error only
FindCoordinator        v0-3: the error, its default message and ``Node.noNode()`` (-1, ``""``, -1); v4+: the same
                       for every requested key (``prepareOldResponse`` / ``prepareErrorResponse``)
ConsumerGroup...       KIP-848: ConsumerGroupHeartbeat the top-level error; ConsumerGroupDescribe the error on every
                       requested group
CreateTopics, ...      the admin APIs: the error and its default message on every requested topic (CreateTopics,
                       CreatePartitions; DeleteTopics: name and id, no message) or resource (DescribeConfigs, with
                       its name and type); DescribeCluster the top-level error and message
ApiVersions            the error; UNSUPPORTED_VERSION also lists ApiVersions' own version range (KIP-511)
Produce, Fetch, ...    the error on every requested partition (data-path APIs of ``kgroup serve``)
=====================  ===============================================================================================

:func:`error_response` dispatches by API key; the per-API builders are public for callers that know the API.
Throttle times are 0 (kgroup does not throttle).
"""

from __future__ import annotations

from typing import Any, Iterable

import protocol.messages as M
from protocol.api import APIS, ApiKey
from protocol.errors import ErrorCode


def shape_join_group_response(resp: Any, version: int) -> Any:
    """``JoinGroupResponse(data, version)``: v0-6 cannot carry a null protocol name (sent as ``""``); from v7 an
    empty protocol name is sent as null. Applied to every JoinGroup response, success or error, once its request's
    version is known (a parked JoinGroup's answer is built before that)."""
    if version < 7 and resp.protocol_name is None:
        resp.protocol_name = ""
    elif version >= 7 and resp.protocol_name == "":
        resp.protocol_name = None
    return resp


def join_group_error(error: ErrorCode | int, member_id: str = "", version: int | None = None) -> Any:
    """A JoinGroup answer carrying only ``error`` (and ``member_id``); shaped for ``version`` when given."""
    resp = M.JoinGroupResponse(error_code=int(error), generation_id=-1, protocol_type=None, protocol_name=None,
                               leader="", member_id=member_id, members=[])
    return resp if version is None else shape_join_group_response(resp, version)


def sync_group_error(error: ErrorCode | int) -> Any:
    return M.SyncGroupResponse(error_code=int(error), assignment=b"")


def heartbeat_error(error: ErrorCode | int) -> Any:
    return M.HeartbeatResponse(error_code=int(error))


def leave_group_error(error: ErrorCode | int) -> Any:
    return M.LeaveGroupResponse(error_code=int(error), members=[])


def offset_commit_error(topics: Iterable[Any], error: ErrorCode | int) -> Any:
    """The error on every partition of ``topics`` (request topics), in request order."""
    R = M.OffsetCommitResponse
    code = int(error)
    return R(topics=[R.Topic(name=t.name, topic_id=t.topic_id,  # v10+ names topics by id
                             partitions=[R.Topic.Partition(partition_index=p.partition_index, error_code=code)
                                         for p in t.partitions]) for t in topics])


def offset_fetch_group_error(group_id: str, error: ErrorCode | int) -> Any:
    """One group of an OffsetFetch v8+ answer carrying ``error``."""
    return M.OffsetFetchResponse.Group(group_id=group_id, error_code=int(error), topics=[])


def offset_fetch_error(version: int, request: Any, error: ErrorCode | int) -> Any:
    R = M.OffsetFetchResponse
    code = int(error)
    if version >= 8:
        return R(groups=[offset_fetch_group_error(g.group_id, code) for g in request.groups])
    if version >= 2:
        return R(error_code=code, topics=[])
    # v0-1 have no top-level error: each requested partition carries it, with offset -1.
    return R(topics=[R.Topic(name=t.name, partitions=[
        R.Topic.Partition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                          error_code=code) for p in t.partition_indexes]) for t in (request.topics or [])])


def described_group_error(group_id: str, error: ErrorCode | int) -> Any:
    """``DescribeGroupsResponse.groupError``: unknown state, protocol type and protocol, no members."""
    return M.DescribeGroupsResponse.DescribedGroup(error_code=int(error), group_id=group_id, group_state="",
                                                   protocol_type="", protocol_data="", members=[])


def list_groups_error(error: ErrorCode | int) -> Any:
    return M.ListGroupsResponse(error_code=int(error), groups=[])


def deletable_group_result(group_id: str, error: ErrorCode | int) -> Any:
    return M.DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=int(error))


def offset_delete_error(error: ErrorCode | int) -> Any:
    return M.OffsetDeleteResponse(error_code=int(error), topics=[])


def find_coordinator_error(version: int, keys: Iterable[str], error: ErrorCode | int,
                           message: str | None = None) -> Any:
    """``FindCoordinatorResponse.prepareOldResponse`` (v0-3: one answer) / ``prepareErrorResponse`` (v4+: one per
    key), with ``Node.noNode()``; the message defaults to the error's (``Errors.message()``)."""
    e = ErrorCode.from_code(int(error))
    msg = e.message if message is None else message
    R = M.FindCoordinatorResponse
    if version >= 4:
        return R(coordinators=[R.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(e),
                                             error_message=msg) for k in keys])
    return R(error_code=int(e), error_message=msg, node_id=-1, host="", port=-1)


def error_response(api_key: int, version: int, request: Any, error: ErrorCode | int,
                   message: str | None = None) -> Any:
    """``AbstractRequest.getErrorResponse``: the answer to ``request`` (of ``api_key`` at ``version``) failing
    with ``error`` everywhere it can fail; ``message`` goes where the response has an error message
    (ConsumerGroupHeartbeat)."""
    key = int(api_key)
    code = int(error)
    if key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return M.ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
    if key == ApiKey.JOIN_GROUP:
        return join_group_error(code, "", version)
    if key == ApiKey.SYNC_GROUP:
        return sync_group_error(code)
    if key == ApiKey.HEARTBEAT:
        return heartbeat_error(code)
    if key == ApiKey.LEAVE_GROUP:
        return leave_group_error(code)
    if key == ApiKey.OFFSET_COMMIT:
        return offset_commit_error(request.topics, code)
    if key == ApiKey.OFFSET_FETCH:
        return offset_fetch_error(version, request, code)
    if key == ApiKey.DESCRIBE_GROUPS:
        return M.DescribeGroupsResponse(groups=[described_group_error(g, code) for g in request.groups])
    if key == ApiKey.LIST_GROUPS:
        return list_groups_error(code)
    if key == ApiKey.DELETE_GROUPS:
        return M.DeleteGroupsResponse(results=[deletable_group_result(g, code) for g in request.groups_names])
    if key == ApiKey.OFFSET_DELETE:
        return offset_delete_error(code)
    if key == ApiKey.FIND_COORDINATOR:
        return find_coordinator_error(version, list(request.coordinator_keys) if version >= 4 else [request.key],
                                      code)
    if key == ApiKey.CONSUMER_GROUP_DESCRIBE:  # ConsumerGroupDescribeRequest.getErrorResponse: one per group
        R = M.ConsumerGroupDescribeResponse
        return R(groups=[R.DescribedGroup(error_code=code, group_id=g) for g in request.group_ids])
    if key == ApiKey.API_VERSIONS:
        R = M.ApiVersionsResponse
        keys = []
        if code == ErrorCode.UNSUPPORTED_VERSION:
            api = APIS[ApiKey.API_VERSIONS]
            keys = [R.ApiVersion(api_key=key, min_version=api.min_version, max_version=api.max_version)]
        return R(error_code=code, api_keys=keys)
    if key in _ADMIN_APIS:
        return _admin_error(key, version, request, code)
    return _data_path_error(key, version, request, code)


_ADMIN_APIS = {ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_CLUSTER,
               ApiKey.DESCRIBE_CONFIGS}


def _admin_error(key: int, version: int, request: Any, code: int) -> Any:
    """The admin APIs' ``getErrorResponse`` (``CreateTopicsRequest``, ``DeleteTopicsRequest``,
    ``CreatePartitionsRequest``, ``DescribeClusterRequest``, ``DescribeConfigsRequest``): the error, with the
    message ``ApiError.fromThrowable`` gives an exception without one (the error's default), per requested item."""
    msg = ErrorCode.from_code(code).message
    if key == ApiKey.CREATE_TOPICS:
        R = M.CreateTopicsResponse
        return R(topics=[R.Topic(name=t.name, error_code=code, error_message=msg) for t in request.topics])
    if key == ApiKey.DELETE_TOPICS:  # DeleteTopicsRequest.topics(): by name below v6 (topic id zero)
        R = M.DeleteTopicsResponse
        if version >= 6:
            items = [(t.name, t.topic_id) for t in request.topics]
        else:
            items = [(n, None) for n in request.topic_names]
        return R(responses=[R.Response(name=n, **({} if tid is None else {"topic_id": tid}), error_code=code)
                            for n, tid in items])
    if key == ApiKey.CREATE_PARTITIONS:
        R = M.CreatePartitionsResponse
        return R(results=[R.Result(name=t.name, error_code=code, error_message=msg) for t in request.topics])
    if key == ApiKey.DESCRIBE_CLUSTER:
        return M.DescribeClusterResponse(error_code=code, error_message=msg, cluster_id="", brokers=[])
    R = M.DescribeConfigsResponse
    return R(results=[R.Result(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=[]) for r in request.resources])


def _data_path_error(key: int, version: int, request: Any, code: int) -> Any:
    """The data-path APIs ``kgroup serve`` answers: the error on every requested partition (Metadata: topic), as
    ``ProduceRequest`` (with the error's message), ``FetchRequest`` (also the top-level error; kgroup's Fetch stops
    at v12, below the v13 form without partitions), ``ListOffsetsRequest``, ``OffsetsForLeaderEpochRequest``,
    ``MetadataRequest`` (no top-level error; a null topic name becomes ``""``) and ``InitProducerIdRequest`` build
    it. Produce with acks=0 gets no response in Kafka; a caller that injects faults answers it anyway."""
    if key == ApiKey.PRODUCE:
        R = M.ProduceResponse
        msg = ErrorCode.from_code(code).message
        return R(responses=[R.Topic(name=t.name, partition_responses=[
            R.Topic.Partition(index=p.index, error_code=code, base_offset=-1, error_message=msg)
            for p in t.partition_data]) for t in request.topic_data])
    if key == ApiKey.FETCH:
        R = M.FetchResponse
        return R(error_code=code, session_id=request.session_id, responses=[R.Topic(topic=t.topic, partitions=[
            R.Topic.Partition(partition_index=p.partition, error_code=code, high_watermark=-1, records=None)
            for p in t.partitions]) for t in request.topics])
    if key == ApiKey.LIST_OFFSETS:
        R = M.ListOffsetsResponse
        return R(topics=[R.Topic(name=t.name, partitions=[
            R.Topic.Partition(partition_index=p.partition_index, error_code=code, old_style_offsets=[])
            for p in t.partitions]) for t in request.topics])
    if key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        R = M.OffsetForLeaderEpochResponse
        return R(topics=[R.Topic(topic=t.topic, partitions=[R.Topic.Partition(error_code=code, partition=p.partition)
                                                            for p in t.partitions]) for t in request.topics])
    if key == ApiKey.METADATA:
        R = M.MetadataResponse
        return R(brokers=[], topics=[R.Topic(error_code=code, name=t.name or "", partitions=[])
                                     for t in (request.topics or [])])
    if key == ApiKey.INIT_PRODUCER_ID:
        return M.InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    return APIS[key].response.cls(error_code=code)

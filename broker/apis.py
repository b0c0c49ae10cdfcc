"""The broker's request handling, sans-IO: what Kafka's ``KafkaApis`` does with a decoded request, for every broker
of one cluster. The asyncio server (broker/server.py) and the simulator (scenarios/) both run it, so a scenario
exercises the code real clients meet.

:class:`BrokerApis` answers a request that arrived at a broker:

* **ApiVersions** (``KafkaApis.handleApiVersionsRequest``): the served APIs with their full version ranges; a v3+
  request whose client software name or version does not match Kafka's pattern gets ``INVALID_REQUEST`` and no
  api keys (``ApiVersionsRequest.isValid``). A version above ours is not an error but the KIP-511 fallback
  (:meth:`BrokerApis.check_version` says ``FALLBACK``; the frame is ``protocol.versions``'s).
* **Metadata** (``KafkaApis.handleTopicMetadataRequest`` over the cluster model, as ``KRaftMetadataCache``
  reports it): live brokers, topics with leaders, replicas, ISR, offline replicas, leader epochs and stable topic
  ids; unknown topics, illegal names, ``__consumer_offsets`` not yet created, and auto-creation
  (``AutoTopicCreationManager``: created, reported ``LEADER_NOT_AVAILABLE`` this once).
* **FindCoordinator** routing (``KafkaApis.handleFindCoordinatorRequest``): group keys go to the coordinator
  service; transaction keys get ``COORDINATOR_NOT_AVAILABLE`` -- Kafka's answer while ``__transaction_state``
  does not exist, and kgroup has no transaction coordinator.
* **The group APIs** (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
  ListGroups, DeleteGroups, OffsetDelete, and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe) go to
  :class:`coordinator.service.GroupCoordinatorService`.
* **The data path** (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, InitProducerId) is
  :class:`broker.datapath.DataPath`'s.
* **The admin APIs** (CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster, DescribeConfigs) are
  :class:`broker.admin.AdminApis`' (the cluster model is the controller).

Every call returns the coordinator's :class:`~coordinator.service.Output` -- everything the call produced, the
answer to this request included -- so a driver handles every API the same way. ``Output.answer`` is the answer
to the request just handled: a response, :data:`~coordinator.runtime.PARKED` (a JoinGroup or SyncGroup the
coordinator answers later, in the Output of a later call), :data:`~coordinator.runtime.ABANDONED` (Kafka never
answers it -- close the connection), or one of the data path's decisions: :data:`~broker.datapath.NO_RESPONSE`,
:data:`~broker.datapath.CLOSE`, a :class:`~broker.datapath.FetchWait` (resume it with
:meth:`BrokerApis.resume_fetch`). A request that reaches a
stopped broker raises :class:`~coordinator.service.BrokerStopped` (the driver closes the connection).

No sockets, event loop, clock or files: time comes in as ``now_ms``; log files are the driver's
(``broker/storage.py`` behind the data path's storage).
"""

from __future__ import annotations

import base64
import logging
import re
import uuid
from typing import Any

from protocol.api import APIS, ApiKey
from protocol.error_responses import find_coordinator_error
from protocol.errors import ErrorCode
from protocol.messages import (ApiVersionsRequest, ApiVersionsResponse, CreatePartitionsRequest, CreateTopicsRequest,
                               DeleteTopicsRequest, DescribeClusterRequest, DescribeConfigsRequest, FetchRequest,
                               FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest,
                               ListOffsetsRequest, MetadataRequest, MetadataResponse, OffsetForLeaderEpochRequest,
                               ProduceRequest)
from protocol.versions import api_versions_response

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC, ClusterError, kafka_style_id, topic_id
from coordinator.runtime import Marker
from coordinator.service import BrokerStopped, GroupCoordinatorService, Output, RequestContext

from broker.admin import AdminApis
from broker.datapath import DataPath, FetchWait

E = ErrorCode
log = logging.getLogger("kgroup.server")

#: The APIs kgroup's brokers implement and advertise in ApiVersions.
SERVED_APIS: tuple[int, ...] = (
    ApiKey.METADATA, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
    ApiKey.API_VERSIONS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
    # KIP-848's consumer group protocol (coordinator/consumer_manager.py)
    ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
    # the data path (broker/datapath.py): ReplicaManager/UnifiedLog reduced to in-process partition logs
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH,
    # the admin APIs users' fixtures call (broker/admin.py): the cluster model is the controller
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_CONFIGS,
)

#: ``ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN`` (KIP-511).
_SOFTWARE_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
#: ``org.apache.kafka.common.internals.Topic``: legal topic names.
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]+")
_TOPIC_MAX_LENGTH = 249
#: Kafka prints cluster ids as URL-safe base64 of a UUID without padding (``Uuid.toString``).
# kafka-storage random-uuid: Uuid.randomUuid().toString(), without a hyphen in 4.4 (KAFKA-20072).
CLUSTER_ID = base64.urlsafe_b64encode(kafka_style_id("cluster").bytes).decode().rstrip("=")
_ZERO_UUID = uuid.UUID(int=0)


#: :meth:`BrokerApis.check_version`: an ApiVersions version above ours -- answer with the KIP-511 fallback.
FALLBACK = Marker("FALLBACK")


def valid_topic_name(name: str) -> bool:
    return (bool(name) and len(name) <= _TOPIC_MAX_LENGTH and name not in (".", "..")
            and _TOPIC_RE.fullmatch(name) is not None)


def _answered(ctx: RequestContext, answer: Any) -> Output:
    """The Output of a call the broker answered itself: the answer, also among the responses if it is one (a data
    path decision is not)."""
    if type(answer) is FetchWait or type(answer) is Marker:
        return Output(answer=answer)
    return Output(responses=[(ctx.request_id, answer)], answer=answer)


class BrokerApis:
    """``KafkaApis`` of every broker of one cluster, over the coordinator service and the data path."""

    def __init__(self, svc: GroupCoordinatorService, data: DataPath | None = None, *,
                 auto_create_topics: bool = False, num_partitions: int = 1, default_replication_factor: int = 1,
                 served: tuple[int, ...] = SERVED_APIS) -> None:
        self.svc = svc
        self.cluster = svc.cluster
        self.data = data if data is not None else DataPath(svc.cluster)
        self.auto_create_topics = auto_create_topics        # auto.create.topics.enable
        self.num_partitions = num_partitions                # num.partitions
        self.default_replication_factor = default_replication_factor  # default.replication.factor
        self.served = frozenset(int(k) for k in served)
        self._versions = api_versions_response(keys=self.served)
        data_handle = self.data.handle
        #: request type -> handler(broker_id, request, version) -> answer; every other request type is the
        #: coordinator's
        self._own = {ApiVersionsRequest: self.api_versions, MetadataRequest: self.metadata,
                     ProduceRequest: data_handle, FetchRequest: data_handle, ListOffsetsRequest: data_handle,
                     OffsetForLeaderEpochRequest: data_handle, InitProducerIdRequest: data_handle}
        #: the admin APIs (broker/admin.py): CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster,
        #: DescribeConfigs
        self.admin = AdminApis(self.cluster, svc.config, topic_id=topic_id, cluster_id=CLUSTER_ID,
                               num_partitions=num_partitions, default_replication_factor=default_replication_factor,
                               auto_create_topics=auto_create_topics, delete_topic_logs=self.data.delete_topic)
        self._own.update({CreateTopicsRequest: self.admin.create_topics, DeleteTopicsRequest: self.admin.delete_topics,
                          CreatePartitionsRequest: self.admin.create_partitions,
                          DescribeClusterRequest: self.admin.describe_cluster,
                          DescribeConfigsRequest: self.admin.describe_configs})

    # --- requests --------------------------------------------------------------------------------------------

    def check_version(self, api_key: int, version: int) -> Any:
        """None if this broker serves ``api_key`` at ``version``; :data:`FALLBACK` for an ApiVersions version
        above ours (KIP-511: ``ApiKeys.isVersionEnabled`` accepts every ApiVersions version); else why not, for
        the log line before the connection is closed (``SocketServer.parseRequestHeader``: an unknown key or an
        API not enabled on the listener, ``RequestContext.parseRequest``: an unsupported version ->
        ``InvalidRequestException``)."""
        api = APIS.get(api_key)
        if api is None:
            return f"unknown API key {api_key}"
        if api_key not in self.served:
            return f"API {api.name} (key {api_key}) is not served"
        if api.supports(version):
            return None
        if api_key == ApiKey.API_VERSIONS:
            return FALLBACK
        return f"{api.name} v{version} is not supported (supported: {api.min_version}-{api.max_version})"

    def handle(self, broker_id: int, request: Any, ctx: RequestContext, now_ms: int) -> Output:
        """Handle a decoded request that arrived at ``broker_id``; its answer is ``output.answer``. Raises
        BrokerStopped if the broker is stopped."""
        own = self._own.get(type(request))
        if own is None:
            if type(request) is FindCoordinatorRequest and ctx.api_version >= 1 and request.key_type == 1:
                own = self.find_transaction_coordinator
            else:
                return self.svc.handle(broker_id, request, ctx, now_ms)
        if not self.cluster.is_alive(broker_id):
            raise BrokerStopped(f"broker {broker_id} is stopped")
        return _answered(ctx, own(broker_id, request, ctx.api_version))

    def resume_fetch(self, broker_id: int, wait: FetchWait, may_wait: bool) -> Any:
        """Ask again for a fetch that waited (after an append to one of its partitions: ``may_wait``; or when its
        wait is over: not): the Fetch response or another :class:`FetchWait`. Raises BrokerStopped if the broker
        stopped meanwhile."""
        if not self.cluster.is_alive(broker_id):
            raise BrokerStopped(f"broker {broker_id} is stopped")
        return self.data.fetch(broker_id, wait.request, wait.version, may_wait)

    # --- ApiVersions (KafkaApis.handleApiVersionsRequest) ----------------------------------------------------

    def api_versions(self, broker_id: int, req: Any, version: int) -> ApiVersionsResponse:
        if version >= 3 and not (_SOFTWARE_RE.fullmatch(req.client_software_name or "")
                                 and _SOFTWARE_RE.fullmatch(req.client_software_version or "")):
            # KafkaApis.handleApiVersionsRequest: !apiVersionRequest.isValid -> INVALID_REQUEST, no api keys.
            return ApiVersionsResponse(error_code=int(E.INVALID_REQUEST), api_keys=[])
        return self._versions

    # --- FindCoordinator for transaction keys (KafkaApis.getCoordinator) -------------------------------------

    def find_transaction_coordinator(self, broker_id: int, req: Any, version: int) -> FindCoordinatorResponse:
        # KafkaApis.getCoordinator: the __transaction_state topic does not exist (kgroup has no transaction
        # coordinator) -> COORDINATOR_NOT_AVAILABLE, Node.noNode.
        keys = req.coordinator_keys if version >= 4 else [req.key]
        return find_coordinator_error(version, keys, E.COORDINATOR_NOT_AVAILABLE)

    # --- Metadata (KafkaApis.handleTopicMetadataRequest, KRaftMetadataCache.getTopicMetadata) ----------------

    def metadata(self, broker_id: int, req: Any, version: int) -> MetadataResponse:
        cluster = self.cluster
        live = cluster.live_brokers()
        brokers = [MetadataResponse.Broker(node_id=b, host=cluster.brokers[b].host, port=cluster.brokers[b].port,
                                           rack=cluster.brokers[b].rack) for b in live]
        # KRaft brokers report a live broker as "controller" (clients cannot reach the quorum); take the lowest.
        controller = live[0] if live else -1
        all_topics = (req.topics is not None and len(req.topics) == 0) if version == 0 else req.topics is None
        allow_auto = req.allow_auto_topic_creation if version >= 4 else True
        topics: list[Any] = []
        if all_topics:
            for name in sorted(cluster.topics):
                topics.append(self._topic_metadata(name, version))
        else:
            seen: set[str] = set()
            for t in req.topics:
                name, tid = t.name, getattr(t, "topic_id", None) or _ZERO_UUID
                if name is None and version >= 12:  # lookup by topic id (KIP-516)
                    name = next((n for n in sorted(cluster.topics) if topic_id(n) == tid), None)
                    if name is None:
                        topics.append(MetadataResponse.Topic(error_code=int(E.UNKNOWN_TOPIC_ID), name=None,
                                                             topic_id=tid, partitions=[]))
                        continue
                elif name is None or (version < 12 and tid != _ZERO_UUID):
                    # KafkaApis: "Topic IDs are not supported in requests for version 10/11" (InvalidRequest)
                    topics.append(_topic_error(name or "", E.INVALID_REQUEST))
                    continue
                if name in seen:
                    continue
                seen.add(name)
                if name in cluster.topics:
                    topics.append(self._topic_metadata(name, version))
                elif not valid_topic_name(name):
                    topics.append(_topic_error(name, E.INVALID_TOPIC_EXCEPTION))
                elif name == OFFSETS_TOPIC:
                    # not created yet (too few brokers for offsets.topic.replication.factor)
                    topics.append(_topic_error(name, E.COORDINATOR_NOT_AVAILABLE, internal=True))
                elif allow_auto and self.auto_create_topics:
                    # AutoTopicCreationManager: the topic is being created -> LEADER_NOT_AVAILABLE this time.
                    rf = min(self.default_replication_factor, len(cluster.broker_ids()))
                    try:
                        cluster.create_topic(name, self.num_partitions, rf)
                        log.info("auto-created topic %s (%d partitions, replication %d)", name,
                                 self.num_partitions, rf)
                        topics.append(_topic_error(name, E.LEADER_NOT_AVAILABLE))
                    except ClusterError as exc:
                        log.warning("cannot auto-create topic %s: %s", name, exc)
                        topics.append(_topic_error(name, E.INVALID_REPLICATION_FACTOR))
                else:
                    topics.append(_topic_error(name, E.UNKNOWN_TOPIC_OR_PARTITION))
        return MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id=CLUSTER_ID, controller_id=controller,
                                topics=topics, error_code=0)

    def _topic_metadata(self, name: str, version: int) -> Any:
        cluster = self.cluster
        error_unavailable_endpoints = version == 0  # KafkaApis: only v0 reports REPLICA_NOT_AVAILABLE
        parts = []
        for ps in cluster.partitions(name):
            offline = [r for r in ps.replicas if not cluster.is_alive(r)]
            replicas, isr = list(ps.replicas), list(ps.isr)
            if error_unavailable_endpoints:
                replicas = [r for r in replicas if cluster.is_alive(r)]
                isr = [r for r in isr if cluster.is_alive(r)]
            if ps.leader == NO_LEADER or not cluster.is_alive(ps.leader):
                err, leader = E.LEADER_NOT_AVAILABLE, -1
            elif error_unavailable_endpoints and (len(replicas) < len(ps.replicas) or len(isr) < len(ps.isr)):
                err, leader = E.REPLICA_NOT_AVAILABLE, ps.leader
            else:
                err, leader = E.NONE, ps.leader
            parts.append(MetadataResponse.Topic.Partition(
                error_code=int(err), partition_index=ps.partition, leader_id=leader, leader_epoch=ps.leader_epoch,
                replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline))
        return MetadataResponse.Topic(error_code=0, name=name, topic_id=topic_id(name),
                                      is_internal=name == OFFSETS_TOPIC, partitions=parts)


def _topic_error(name: str, e: ErrorCode, internal: bool = False) -> Any:
    return MetadataResponse.Topic(error_code=int(e), name=name, topic_id=_ZERO_UUID, is_internal=internal,
                                  partitions=[])

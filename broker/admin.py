"""The admin APIs users' test fixtures call, sans-IO: CreateTopics, DeleteTopics, CreatePartitions,
DescribeCluster and DescribeConfigs over the cluster model.

In KRaft a broker forwards CreateTopics, DeleteTopics and CreatePartitions to the controller (``ControllerApis``,
``ReplicationControlManager``); kgroup's cluster model is its own controller, so any broker answers them at once and
every broker sees the result in its next Metadata response. Rules and messages follow Kafka 4.4:

* **CreateTopics** (``ControllerApis.createTopics``, ``ReplicationControlManager.createTopics``/``createTopic``): a
  name given twice is ``INVALID_REQUEST`` "Duplicate topic name." (answered after the others); an illegal name is
  ``INVALID_TOPIC_EXCEPTION`` (``Topic.validate``'s text), a name colliding with an existing one through '.'/'_' too;
  an existing topic ``TOPIC_ALREADY_EXISTS``; an unknown config name ``INVALID_CONFIG`` ("Unknown topic config
  name: x", ``LogConfig.validateNames``); a manual assignment needs ``num_partitions`` and ``replication_factor`` of
  -1 (``INVALID_REQUEST``) and consecutive partitions of registered, distinct brokers, all of the same size
  (``INVALID_REPLICA_ASSIGNMENT``); ``replication_factor`` 0 or below -1 is ``INVALID_REPLICATION_FACTOR``, more
  than the registered brokers too (``StripedReplicaPlacer``'s text); ``num_partitions`` 0 or below -1 is
  ``INVALID_PARTITIONS``; -1 takes ``num.partitions`` / ``default.replication.factor`` (KIP-464). ``validate_only``
  checks everything and creates nothing. From v5 a created topic's result carries its partitions, replication and
  configs; v7 its topic id.
* **DeleteTopics** (``ControllerApis.deleteTopics``): by name (v0-5 ``topic_names``; v6 ``topics`` by name or id):
  a name or id given twice is ``INVALID_REQUEST`` ("Duplicate topic name."/"Duplicate topic id."), both name and
  id ``INVALID_REQUEST``, neither ``INVALID_REQUEST``; an unknown name ``UNKNOWN_TOPIC_OR_PARTITION``, an unknown id
  ``UNKNOWN_TOPIC_ID``. Deletion removes the topic from Metadata and its partition logs (and their files).
  Kafka's group coordinator also drops the committed offsets of deleted partitions
  (``OffsetMetadataManager.onPartitionsDeleted``); kgroup's coordinator keeps them (docs/compatibility.md).
* **CreatePartitions** (``ControllerApis.createPartitions``, ``ReplicationControlManager.createPartitions``):
  duplicates ``INVALID_REQUEST``; unknown topic ``UNKNOWN_TOPIC_OR_PARTITION``; the same count ``INVALID_PARTITIONS``
  "Topic already has N partition(s).", fewer "The topic T currently has N partition(s); M would not be an
  increase."; manual assignments must number the new partitions (``INVALID_REPLICA_ASSIGNMENT``) and have the
  topic's replication factor. The consumers see the new partitions in their next Metadata response; a group leader
  whose subscription covers the topic then rejoins and the group rebalances (``ConsumerCoordinator``'s metadata
  snapshot), exactly as on Kafka.
* **DescribeCluster** (``KafkaApis.handleDescribeCluster``, ``AuthHelper.computeDescribeClusterResponse``): the
  live brokers, the cluster id and a live broker as controller id (as Metadata says); an unknown endpoint type is
  ``UNSUPPORTED_ENDPOINT_TYPE`` (v0: ``INVALID_REQUEST``), the controllers' type ``MISMATCHED_ENDPOINT_TYPE``.
* **DescribeConfigs** (``ConfigHelper.describeConfigs``), a read-only view of what kgroup has: a BROKER resource
  named after this broker lists kgroup's broker settings (``STATIC_BROKER_CONFIG`` where the value differs from
  Kafka's default, else ``DEFAULT_CONFIG``); an empty name the cluster's dynamic defaults (none); another broker's
  id ``INVALID_REQUEST``. A TOPIC resource lists the configs the topic was created with (``TOPIC_CONFIG``: kgroup
  stores them and applies none); an unknown topic ``UNKNOWN_TOPIC_OR_PARTITION``. ``configuration_keys`` filters.
  Every entry is read-only: kgroup serves no AlterConfigs.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any, Callable

from protocol.errors import ErrorCode
from protocol.messages import (CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse,
                               DescribeClusterResponse, DescribeConfigsResponse)

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC, Cluster, ClusterError, PartitionState
from coordinator.config import CoordinatorConfig

E = ErrorCode
log = logging.getLogger("kgroup.admin")

#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``: a CreateTopics request that would create more partitions
#: is refused whole before anything is allocated ("Exceeding this number of topics per batch has led to
#: out-of-memory exceptions")
MAX_PARTITIONS_PER_BATCH = 10_000
#: ``QuorumController.MAX_RECORDS_PER_USER_OP``: the records one controller operation may write (a ``BoundedList``);
#: a CreatePartitions request's new partitions (one ``PartitionRecord`` each) share it
MAX_RECORDS_PER_USER_OP = 10_000

#: ``LogConfig``'s topic config names (Kafka 4.4, internal ones included: ``validateNames`` accepts them).
TOPIC_CONFIG_NAMES = frozenset((
    "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms",
    "retention.bytes", "retention.ms", "max.message.bytes", "index.interval.bytes", "delete.retention.ms",
    "min.compaction.lag.ms", "max.compaction.lag.ms", "file.delete.delay.ms", "min.cleanable.dirty.ratio",
    "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "preallocate",
    "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas", "remote.storage.enable",
    "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable", "remote.copy.lag.ms",
    "remote.copy.lag.bytes", "remote.log.delete.on.disable", "errors.deadletterqueue.group.enable",
    "internal.segment.bytes"))

# ConfigResource.Type ids
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
# DescribeConfigsResponse.ConfigSource ids
SOURCE_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5
# DescribeConfigsResponse.ConfigType ids
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_SHORT, TYPE_LONG, TYPE_LIST = 1, 2, 3, 4, 5, 7
# EndpointType ids (KIP-919)
ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2
#: ``AclEntry.supportedOperations(CLUSTER)`` as ``Utils.to32BitField`` of their codes: CREATE 5, ALTER 7,
#: DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12 -- what a broker
#: without an authorizer reports when asked (``AuthHelper.authorizedOperations``).
CLUSTER_OPERATIONS = sum(1 << b for b in (5, 7, 8, 9, 10, 11, 12))
NO_OPERATIONS = -2147483648

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_error(name: str) -> str | None:
    """``Topic.validate``'s message for an illegal name, else None."""
    if name == "":
        why = "the empty string is not allowed"
    elif name == ".":
        why = "'.' is not allowed"
    elif name == "..":
        why = "'..' is not allowed"
    elif len(name) > 249:
        why = f"the length of '{name}' is longer than the max allowed length 249"
    elif not _LEGAL.fullmatch(name):
        why = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return "Topic name is invalid: " + why


class AdminError(Exception):
    """An ``ApiException`` of the controller: the error code and its message."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.message)
        self.error = error
        self.message = message


class AdminApis:
    """The admin APIs of every broker of one cluster (the cluster model is the controller)."""

    def __init__(self, cluster: Cluster, config: CoordinatorConfig, *, topic_id: Callable[[str], Any],
                 cluster_id: str, num_partitions: int = 1, default_replication_factor: int = 1,
                 auto_create_topics: bool = False, delete_topic_logs: Callable[[str], None] | None = None) -> None:
        self.cluster = cluster
        self.config = config
        self.topic_id = topic_id
        self.cluster_id = cluster_id
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.auto_create_topics = auto_create_topics
        self.delete_topic_logs = delete_topic_logs
        #: configs given to CreateTopics, per topic (stored and described; kgroup applies none)
        self.topic_configs: dict[str, dict[str, str]] = {}

    # --- CreateTopics ----------------------------------------------------------------------------------------

    def create_topics(self, broker_id: int, req: Any, version: int) -> Any:
        Result = CreateTopicsResponse.Topic
        names = [t.name for t in req.topics]
        seen: set[str] = set()
        dups = [n for n in dict.fromkeys(names) if names.count(n) > 1]
        if self._partitions_requested(t for t in req.topics if t.name not in dups) > MAX_PARTITIONS_PER_BATCH:
            # ReplicationControlManager.validateTotalNumberOfPartitions throws PolicyViolationException; the
            # controller's failure becomes CreateTopicsRequest.getErrorResponse: every topic of the request
            return CreateTopicsResponse(throttle_time_ms=0, topics=[
                Result(name=t.name, error_code=int(E.POLICY_VIOLATION),
                       error_message="Excessively large number of partitions per request.") for t in req.topics])
        results = []
        for t in req.topics:
            if t.name in dups or t.name in seen:
                continue
            seen.add(t.name)
            try:
                result = self._create_topic(t, version, req.validate_only if version >= 1 else False)
            except AdminError as e:
                result = Result(name=t.name, error_code=int(e.error), error_message=e.message)
            results.append(result)
        for n in dups:  # ControllerApis.createTopics answers duplicates after the controller's results
            results.append(Result(name=n, error_code=int(E.INVALID_REQUEST), error_message="Duplicate topic name."))
        if not req.validate_only:
            ok = [r.name for r in results if r.error_code == 0]
            if ok:
                log.info("CreateTopics result(s): %s", ", ".join(f"{n}: SUCCESS" for n in ok))
        return CreateTopicsResponse(throttle_time_ms=0, topics=results)

    def _partitions_requested(self, topics: Any) -> int:
        """``validateTotalNumberOfPartitions``' upper bound: the assignments given, else the partition count (-1:
        ``num.partitions``); it stops counting once past the limit (a hostile count costs nothing)."""
        total = 0
        for t in topics:
            if t.assignments:
                total += len(t.assignments)
            elif t.num_partitions == -1:
                total += self.num_partitions
            elif t.num_partitions > 0:
                total += t.num_partitions
            if total > MAX_PARTITIONS_PER_BATCH:
                break
        return total

    def _create_topic(self, t: Any, version: int, validate_only: bool) -> Any:
        cluster = self.cluster
        why = topic_name_error(t.name)
        if why is not None:
            raise AdminError(E.INVALID_TOPIC_EXCEPTION, why)
        if t.name in cluster.topics:
            raise AdminError(E.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
        if "." in t.name or "_" in t.name:  # Topic.hasCollisionChars: metric names cannot tell '.' from '_'
            norm = t.name.replace(".", "_")
            other = next((n for n in sorted(cluster.topics) if n.replace(".", "_") == norm), None)
            if other is not None:
                raise AdminError(E.INVALID_TOPIC_EXCEPTION, f"Topic '{t.name}' collides with existing topic: {other}")
        configs = {}
        for c in t.configs:
            if c.name not in TOPIC_CONFIG_NAMES:
                raise AdminError(E.INVALID_CONFIG, f"Unknown topic config name: {c.name}")
            if c.value is not None:
                configs[c.name] = c.value
        if t.assignments:
            if t.replication_factor != -1:
                raise AdminError(E.INVALID_REQUEST, "A manual partition assignment was specified, but replication "
                                                    "factor was not set to -1.")
            if t.num_partitions != -1:
                raise AdminError(E.INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions "
                                                    "was not set to -1.")
            by_index: dict[int, list[int]] = {}
            rf = None
            for a in t.assignments:
                if a.partition_index in by_index:
                    raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments for "
                                                                   f"partition {a.partition_index}")
                self._check_manual(list(a.broker_ids), rf)
                rf = len(a.broker_ids)
                if not any(cluster.is_alive(b) for b in a.broker_ids):
                    raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition "
                                     f"assignment for partition {a.partition_index} are fenced or in controlled "
                                     "shutdown.")
                by_index[a.partition_index] = list(a.broker_ids)
            for i in range(len(by_index)):
                if i not in by_index:
                    raise AdminError(E.INVALID_REPLICA_ASSIGNMENT,
                                     "partitions should be a consecutive 0-based integer sequence")
            assignment = [by_index[i] for i in range(len(by_index))]
            rf = len(assignment[0])
        elif t.replication_factor < -1 or t.replication_factor == 0:
            raise AdminError(E.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        elif t.num_partitions < -1 or t.num_partitions == 0:
            raise AdminError(E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        else:
            n = self.num_partitions if t.num_partitions == -1 else t.num_partitions
            rf = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
            registered = len(cluster.broker_ids())
            if rf > registered:
                raise AdminError(E.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {rf} time(s): The target replication factor of "
                                 f"{rf} cannot be reached because only {registered} broker(s) are registered or some "
                                 "brokers have all their log directories cordoned.")
            if not cluster.live_brokers():
                raise AdminError(E.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {rf} time(s): All brokers are currently fenced "
                                 "or in controlled shutdown.")
            assignment = cluster.place(n, rf)
            for i, reps in enumerate(assignment):
                if not any(cluster.is_alive(b) for b in reps):
                    raise AdminError(E.INVALID_REPLICATION_FACTOR,
                                     f"Unable to replicate the partition {rf} time(s): All brokers are currently "
                                     "fenced or in controlled shutdown.")
        if not validate_only:
            try:
                cluster.create_topic(t.name, len(assignment), rf, assignment)
            except ClusterError as e:  # a race the checks above cannot see: report it as Kafka's placer would
                raise AdminError(E.INVALID_REPLICATION_FACTOR, str(e)) from None
            if configs:
                self.topic_configs[t.name] = configs
        result = CreateTopicsResponse.Topic(name=t.name, topic_id=self.topic_id(t.name), error_code=0,
                                            error_message=None)
        if version >= 5:
            # Kafka returns the effective configs; kgroup has no log configs of its own, so it returns what was set
            result.num_partitions = len(assignment)
            result.replication_factor = rf
            result.topic_config_error_code = 0
            result.configs = [CreateTopicsResponse.Topic.Config(name=k, value=v, read_only=True,
                                                                config_source=SOURCE_TOPIC_CONFIG, is_sensitive=False)
                              for k, v in sorted(configs.items())]
        return result

    def _check_manual(self, brokers: list[int], rf: int | None) -> None:
        """``ReplicationControlManager.validateManualPartitionAssignment``."""
        if not brokers:
            raise AdminError(E.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        prev = None
        for b in sorted(brokers):
            if b not in self.cluster.brokers:
                raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker {b}, "
                                                               "but no such broker is registered.")
            if b == prev:
                raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker "
                                                               f"{prev} more than once.")
            prev = b
        if rf is not None and len(brokers) != rf:
            raise AdminError(E.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(brokers)} replica(s), "
                             f"but this is not consistent with previous partitions, which have {rf} replica(s).")

    # --- DeleteTopics ----------------------------------------------------------------------------------------

    def delete_topics(self, broker_id: int, req: Any, version: int) -> Any:
        zero = uuid.UUID(int=0)
        R = DeleteTopicsResponse.Response
        out: list[Any] = []
        names: list[str] = []
        dup_names: list[str] = []
        ids: list[Any] = []
        dup_ids: list[Any] = []

        def add_name(n: str) -> None:
            if n in dup_names:
                return
            if n in names:
                names.remove(n)
                dup_names.append(n)
            else:
                names.append(n)

        if version <= 5:
            for n in req.topic_names:
                add_name(n)
        else:
            for t in req.topics:
                if t.name is None:
                    if t.topic_id == zero:
                        out.append(R(name=None, topic_id=zero, error_code=int(E.INVALID_REQUEST),
                                     error_message="Neither topic name nor id were specified."))
                    elif t.topic_id in dup_ids:
                        pass
                    elif t.topic_id in ids:
                        ids.remove(t.topic_id)
                        dup_ids.append(t.topic_id)
                    else:
                        ids.append(t.topic_id)
                elif t.topic_id == zero:
                    add_name(t.name)
                else:
                    out.append(R(name=t.name, topic_id=t.topic_id, error_code=int(E.INVALID_REQUEST),
                                 error_message="You may not specify both topic name and topic id."))
        for n in dup_names:
            out.append(R(name=n, topic_id=zero, error_code=int(E.INVALID_REQUEST), error_message="Duplicate topic name."))
        for i in dup_ids:
            out.append(R(name=None, topic_id=i, error_code=int(E.INVALID_REQUEST), error_message="Duplicate topic id."))
        by_id = {self.topic_id(n): n for n in self.cluster.topics}
        targets: dict[str, Any] = {}
        for i in ids:
            n = by_id.get(i)
            if n is None or n == OFFSETS_TOPIC:
                out.append(R(name=None, topic_id=i, error_code=int(E.UNKNOWN_TOPIC_ID), error_message=None))
            else:
                targets[n] = i
        for n in names:
            if n not in self.cluster.topics:
                out.append(R(name=n, topic_id=zero, error_code=int(E.UNKNOWN_TOPIC_OR_PARTITION),
                             error_message=E.UNKNOWN_TOPIC_OR_PARTITION.message))
            elif n in targets:
                out.append(R(name=n, topic_id=targets.pop(n), error_code=int(E.INVALID_REQUEST),
                             error_message="The provided topic name maps to an ID that was already supplied."))
            else:
                targets[n] = self.topic_id(n)
        for n, i in targets.items():
            if n == OFFSETS_TOPIC:
                # kgroup's coordinator lives on it; Kafka would let an admin delete it (and lose every group)
                out.append(R(name=n, topic_id=i, error_code=int(E.INVALID_REQUEST),
                             error_message="kgroup does not delete __consumer_offsets"))
                continue
            self.delete_topic(n)
            out.append(R(name=n, topic_id=i, error_code=0, error_message=None))
        if targets:
            log.info("DeleteTopics: deleted %s", ", ".join(sorted(n for n in targets if n != OFFSETS_TOPIC)))
        return DeleteTopicsResponse(throttle_time_ms=0, responses=out)

    def delete_topic(self, name: str) -> None:
        del self.cluster.topics[name]
        self.topic_configs.pop(name, None)
        if self.delete_topic_logs is not None:
            self.delete_topic_logs(name)

    # --- CreatePartitions ------------------------------------------------------------------------------------

    def create_partitions(self, broker_id: int, req: Any, version: int) -> Any:
        Result = CreatePartitionsResponse.Result
        names = [t.name for t in req.topics]
        dups = [n for n in dict.fromkeys(names) if names.count(n) > 1]
        out = [Result(name=n, error_code=int(E.INVALID_REQUEST), error_message="Duplicate topic name.")
               for n in dups]
        done = set()
        budget = [MAX_RECORDS_PER_USER_OP]  # the operation's records, shared by its topics
        for t in req.topics:
            if t.name in dups or t.name in done:
                continue
            done.add(t.name)
            try:
                self._create_partitions(t, req.validate_only, budget)
                out.append(Result(name=t.name, error_code=0, error_message=None))
            except AdminError as e:
                out.append(Result(name=t.name, error_code=int(e.error), error_message=e.message))
        return CreatePartitionsResponse(throttle_time_ms=0, results=out)

    def _create_partitions(self, t: Any, validate_only: bool, budget: list[int]) -> None:
        cluster = self.cluster
        parts = cluster.topics.get(t.name)
        if parts is None:
            raise AdminError(E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION.message)
        have = len(parts)
        if t.count == have:
            raise AdminError(E.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
        if t.count < have:
            raise AdminError(E.INVALID_PARTITIONS, f"The topic {t.name} currently has {have} partition(s); "
                                                   f"{t.count} would not be an increase.")
        additional = t.count - have
        rf = len(parts[0].replicas)
        if t.assignments is not None:
            if len(t.assignments) != additional:
                raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional "
                                 f"partition(s), but only {len(t.assignments)} assignment(s) were specified.")
        if additional > budget[0]:
            # Kafka adds a PartitionRecord per new partition to the operation's BoundedList of
            # MAX_RECORDS_PER_USER_OP; past it BoundedListTooLongException, which createPartitions' per-topic catch
            # answers as UNKNOWN_SERVER_ERROR (no message). Refused here before anything is placed or allocated.
            raise AdminError(E.UNKNOWN_SERVER_ERROR, None)
        if t.assignments is not None:
            new = []
            for i, a in enumerate(t.assignments):
                self._check_manual(list(a.broker_ids), rf)
                if not any(cluster.is_alive(b) for b in a.broker_ids):
                    raise AdminError(E.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition "
                                     f"assignment for partition {have + i} are fenced or in controlled shutdown.")
                new.append(list(a.broker_ids))
        else:
            new = cluster.place(additional, rf, start_partition=have, existing_first_replica=parts[0].replicas[0])
            for reps in new:
                if not any(cluster.is_alive(b) for b in reps):
                    raise AdminError(E.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {rf} time(s): "
                                     "All brokers are currently fenced or in controlled shutdown.")
        budget[0] -= additional  # the records of a topic that passed every check
        if validate_only:
            return
        for reps in new:
            isr = [b for b in reps if cluster.is_alive(b)]
            # the controller's PartitionRegistration: the first live replica in the ISR leads (leader epoch 0)
            leader = isr[0] if isr else NO_LEADER
            parts.append(PartitionState(t.name, len(parts), list(reps), isr, leader))
        log.info("CreatePartitions: topic %s now has %d partitions", t.name, len(parts))

    # --- DescribeCluster -------------------------------------------------------------------------------------

    def describe_cluster(self, broker_id: int, req: Any, version: int) -> Any:
        endpoint = req.endpoint_type if version >= 1 else ENDPOINT_BROKER
        if endpoint not in (ENDPOINT_BROKER, ENDPOINT_CONTROLLER):
            return DescribeClusterResponse(error_code=int(E.INVALID_REQUEST if version == 0
                                                          else E.UNSUPPORTED_ENDPOINT_TYPE),
                                           error_message=f"Unsupported endpoint type {endpoint}", cluster_id="")
        if endpoint != ENDPOINT_BROKER:
            return DescribeClusterResponse(error_code=int(E.INVALID_REQUEST if version == 0
                                                          else E.MISMATCHED_ENDPOINT_TYPE),
                                           error_message="The request was sent to an endpoint of type BROKER, but we "
                                                         "wanted an endpoint of type CONTROLLER", cluster_id="")
        cluster = self.cluster
        live = cluster.live_brokers()
        shown = cluster.broker_ids() if version >= 2 and req.include_fenced_brokers else live
        brokers = [DescribeClusterResponse.Broker(broker_id=b, host=cluster.brokers[b].host,
                                                  port=cluster.brokers[b].port, rack=cluster.brokers[b].rack,
                                                  is_fenced=not cluster.is_alive(b)) for b in shown]
        ops = CLUSTER_OPERATIONS if req.include_cluster_authorized_operations else NO_OPERATIONS
        return DescribeClusterResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                       endpoint_type=ENDPOINT_BROKER, cluster_id=self.cluster_id,
                                       controller_id=live[0] if live else -1, brokers=brokers,
                                       cluster_authorized_operations=ops)

    # --- DescribeConfigs -------------------------------------------------------------------------------------

    def broker_configs(self, broker_id: int) -> list[tuple[str, str, int, bool]]:
        """(name, value, ConfigType, is Kafka's default) of the broker settings kgroup has, sorted by name."""
        c = self.config
        b = self.cluster.brokers[broker_id]
        rows = [
            ("advertised.listeners", f"PLAINTEXT://{b.host}:{b.port}", TYPE_LIST, False),
            ("auto.create.topics.enable", str(self.auto_create_topics).lower(), TYPE_BOOLEAN,
             self.auto_create_topics is True),
            ("broker.id", str(broker_id), TYPE_INT, False),
            ("default.replication.factor", str(self.default_replication_factor), TYPE_INT,
             self.default_replication_factor == 1),
            ("delete.topic.enable", "true", TYPE_BOOLEAN, True),
            ("group.initial.rebalance.delay.ms", str(c.group_initial_rebalance_delay_ms), TYPE_INT,
             c.group_initial_rebalance_delay_ms == 3000),
            ("group.max.session.timeout.ms", str(c.group_max_session_timeout_ms), TYPE_INT,
             c.group_max_session_timeout_ms == 1_800_000),
            ("group.max.size", str(c.group_max_size), TYPE_INT, c.group_max_size == 2147483647),
            ("group.min.session.timeout.ms", str(c.group_min_session_timeout_ms), TYPE_INT,
             c.group_min_session_timeout_ms == 6000),
            ("node.id", str(broker_id), TYPE_INT, False),
            ("num.partitions", str(self.num_partitions), TYPE_INT, self.num_partitions == 1),
            ("offset.metadata.max.bytes", str(c.offset_metadata_max_bytes), TYPE_INT,
             c.offset_metadata_max_bytes == 4096),
            ("offsets.retention.check.interval.ms", str(c.offsets_retention_check_interval_ms), TYPE_LONG,
             c.offsets_retention_check_interval_ms == 600_000),
            ("offsets.retention.minutes", str(c.offsets_retention_minutes), TYPE_INT,
             c.offsets_retention_minutes == 10080),
            ("offsets.topic.num.partitions", str(c.offsets_topic_num_partitions), TYPE_INT,
             c.offsets_topic_num_partitions == 50),
            ("offsets.topic.replication.factor", str(c.offsets_topic_replication_factor), TYPE_SHORT,
             c.offsets_topic_replication_factor == 3),
        ]
        return rows

    def describe_configs(self, broker_id: int, req: Any, version: int) -> Any:
        Res = DescribeConfigsResponse.Result
        Cfg = DescribeConfigsResponse.Result.Config
        Syn = DescribeConfigsResponse.Result.Config.Synonym
        out = []
        for r in req.resources:
            keys = None if r.configuration_keys is None else set(r.configuration_keys)
            entries: list[Any] = []
            try:
                if r.resource_type == RESOURCE_TOPIC:
                    why = topic_name_error(r.resource_name)
                    if why is not None:
                        raise AdminError(E.INVALID_TOPIC_EXCEPTION, why)
                    if r.resource_name not in self.cluster.topics:
                        out.append(Res(error_code=int(E.UNKNOWN_TOPIC_OR_PARTITION), error_message=None,
                                       resource_type=r.resource_type, resource_name=r.resource_name, configs=[]))
                        continue
                    for name, value in sorted(self.topic_configs.get(r.resource_name, {}).items()):
                        syn = [Syn(name=name, value=value, source=SOURCE_TOPIC_CONFIG)] if req.include_synonyms else []
                        entries.append(Cfg(name=name, value=value, read_only=True, config_source=SOURCE_TOPIC_CONFIG,
                                           is_default=False, is_sensitive=False, synonyms=syn, config_type=0,
                                           documentation=None))
                elif r.resource_type == RESOURCE_BROKER:
                    if r.resource_name:
                        try:
                            target = int(r.resource_name)
                        except ValueError:
                            raise AdminError(E.INVALID_REQUEST, "Broker id must be an integer, but it is: "
                                                                f"{r.resource_name}") from None
                        if target != broker_id:
                            raise AdminError(E.INVALID_REQUEST, f"Unexpected broker id, expected {broker_id} or empty "
                                                                f"string, but received {r.resource_name}")
                        for name, value, typ, default in self.broker_configs(broker_id):
                            source = SOURCE_DEFAULT_CONFIG if default else SOURCE_STATIC_BROKER_CONFIG
                            syn = [Syn(name=name, value=value, source=source)] if req.include_synonyms else []
                            entries.append(Cfg(name=name, value=value, read_only=True, config_source=source,
                                               is_default=default, is_sensitive=False, synonyms=syn,
                                               config_type=typ if version >= 3 else 0, documentation=None))
                    # an empty name: the cluster's dynamic default configs -- kgroup has none
                else:  # BROKER_LOGGER, CLIENT_METRICS, GROUP: settings kgroup does not have
                    raise AdminError(E.INVALID_REQUEST, f"kgroup does not describe configs of resource type "
                                                        f"{r.resource_type}")
            except AdminError as e:
                out.append(Res(error_code=int(e.error), error_message=e.message, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=[]))
                continue
            if keys is not None:
                entries = [c for c in entries if c.name in keys]
            out.append(Res(error_code=0, error_message=None, resource_type=r.resource_type,
                           resource_name=r.resource_name, configs=entries))
        return DescribeConfigsResponse(throttle_time_ms=0, results=out)

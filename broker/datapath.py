"""The data path's rules, sans-IO: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and InitProducerId over the
cluster model and one :class:`~broker.batchlog.RecordBatchLog` per partition.

kgroup is a coordination emulator, but a real client will not consume before it can list offsets and fetch, and
kafka-python's producer (idempotent by default) will not produce before InitProducerId. :class:`DataPath` is what
``KafkaApis.handleProduceRequest`` / ``handleFetchRequest`` / ``handleListOffsetRequest`` /
``handleOffsetForLeaderEpochRequest`` / ``handleInitProducerIdRequest`` and ``ReplicaManager`` decide:

* **Leader checks** (``ReplicaManager.getPartitionOrError``): a partition this broker does not lead is
  ``NOT_LEADER_OR_FOLLOWER``; an unknown one (or an internal topic) ``UNKNOWN_TOPIC_OR_PARTITION``.
* **Leader-epoch fencing** (KIP-320, ``Partition.checkCurrentLeaderEpoch``): a request's ``current_leader_epoch``
  below the partition's is ``FENCED_LEADER_EPOCH``, above it ``UNKNOWN_LEADER_EPOCH``.
* **Fetch** answers at once when it does not want to wait, needs no data, has ``min_bytes``, or hit an error;
  else the answer is a :class:`FetchWait` decision -- Kafka's ``DelayedFetch`` in the fetch purgatory: "wait for
  an append to one of these partitions or until ``max_wait_ms`` has passed, then ask again" (:meth:`DataPath.fetch`
  with ``may_wait=False`` once the wait is over). The I/O driver implements the waiting; the appends since it
  last asked are :meth:`DataPath.drain_appended`. Because a connection has one request in flight (Kafka's muted
  channel), a waiting fetch holds back that connection only -- as on Kafka.
* **Produce** with ``acks=0`` is answered :data:`NO_RESPONSE` (Kafka sends nothing), or :data:`CLOSE` when an
  append failed (``KafkaApis`` closes the connection so that the producer notices and refreshes its metadata).

Fetch sessions (KIP-227) are not created: every response carries ``session_id = 0``, which tells the client the
broker did not open a session, so it keeps sending full fetches (``FetchSessionHandler``) -- what a broker with
``max.incremental.fetch.session.cache.slots = 0`` does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from protocol.errors import ErrorCode
from protocol.messages import (FetchRequest, FetchResponse, InitProducerIdRequest, InitProducerIdResponse,  # type: ignore
                               ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
                               OffsetForLeaderEpochResponse, ProduceRequest, ProduceResponse)

from coordinator.cluster import Cluster
from coordinator.runtime import Marker

from broker.batchlog import AppendError, BatchWriter, RecordBatchLog

E = ErrorCode
log = logging.getLogger("kgroup.datapath")

# ListOffsets special timestamps (ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

#: The answer to a request Kafka does not answer (Produce with acks=0): send nothing, keep the connection.
NO_RESPONSE = Marker("NO_RESPONSE")
#: The answer "close the connection without answering" (Produce with acks=0 whose append failed).
CLOSE = Marker("CLOSE")


@dataclass(frozen=True, slots=True)
class FetchWait:
    """``DelayedFetch`` as a decision: the fetch has less than ``min_bytes``; wait until an append to one of
    ``partitions`` or until ``max_wait_ms`` after the fetch arrived, then ask again."""

    request: Any
    version: int
    partitions: tuple[tuple[str, int], ...]
    max_wait_ms: int


class TopicLogStorage(Protocol):
    """Where the driver keeps the partitions' batches (``broker/storage.py``): ``open(topic, partition)`` returns
    the whole batches already stored and the writer for new ones."""

    def open(self, topic: str, partition: int) -> tuple[bytes, BatchWriter]: ...


class DataPath:
    """The data-path rules of every broker of one cluster (the logs are shared by a partition's replicas)."""

    def __init__(self, cluster: Cluster, storage: TopicLogStorage | None = None, first_producer_id: int = 1000) -> None:
        self.cluster = cluster
        self.storage = storage
        self.logs: dict[tuple[str, int], RecordBatchLog] = {}
        self._appended: list[tuple[str, int]] = []
        self._next_producer_id = first_producer_id  # ProducerIdManager blocks
        self._handlers = {ProduceRequest: self.produce, FetchRequest: self.fetch, ListOffsetsRequest: self.list_offsets,
                          OffsetForLeaderEpochRequest: self.offset_for_leader_epoch,
                          InitProducerIdRequest: self.init_producer_id}

    # --- logs ------------------------------------------------------------------------------------------------

    def log(self, topic: str, partition: int) -> RecordBatchLog:
        key = (topic, partition)
        lg = self.logs.get(key)
        if lg is None:
            if self.storage is None:
                lg = RecordBatchLog(topic, partition)
            else:
                stored, writer = self.storage.open(topic, partition)
                lg = RecordBatchLog(topic, partition, stored, writer)
            self.logs[key] = lg
        return lg

    def close(self) -> None:
        for lg in self.logs.values():
            lg.close()

    def delete_topic(self, topic: str) -> None:
        """A deleted topic's partition logs go (Kafka's ``LogManager.asyncDelete``), their files too."""
        for key in [k for k in self.logs if k[0] == topic]:
            self.logs.pop(key).close()
        delete = getattr(self.storage, "delete_topic", None)
        if delete is not None:
            delete(topic)

    def drain_appended(self) -> list[tuple[str, int]]:
        """The partitions appended to since the last call, in order of first append (what wakes waiting
        fetches)."""
        out, self._appended = self._appended, []
        return list(dict.fromkeys(out))

    def _leader_error(self, broker_id: int, topic: str, partition: int, current_epoch: int = -1) -> ErrorCode | None:
        ps = self.cluster.partition(topic, partition)
        if ps is None or topic.startswith("__"):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        if current_epoch is not None and current_epoch >= 0:
            if current_epoch < ps.leader_epoch:
                return E.FENCED_LEADER_EPOCH
            if current_epoch > ps.leader_epoch:
                return E.UNKNOWN_LEADER_EPOCH
        if ps.leader != broker_id:
            return E.NOT_LEADER_OR_FOLLOWER
        return None

    # --- dispatch --------------------------------------------------------------------------------------------

    def handle(self, broker_id: int, request: Any, version: int) -> Any:
        """The answer to a data-path request: a response, :data:`NO_RESPONSE`, :data:`CLOSE` or a
        :class:`FetchWait`."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise ValueError(f"not a data-path request: {type(request).__name__}")
        return handler(broker_id, request, version)

    # --- Produce (KafkaApis.handleProduceRequest -> ReplicaManager.appendRecords) ----------------------------

    def produce(self, broker_id: int, req: Any, version: int) -> Any:
        P = ProduceResponse.Topic.Partition
        if req.transactional_id is not None:
            # no transaction coordinator: Kafka would fail the authorization/transaction checks
            code = E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            parts = {t.name: [P(index=p.index, error_code=int(code), base_offset=-1) for p in t.partition_data]
                     for t in req.topic_data}
        elif req.acks not in (-1, 0, 1):
            parts = {t.name: [P(index=p.index, error_code=int(E.INVALID_REQUIRED_ACKS), base_offset=-1)
                              for p in t.partition_data] for t in req.topic_data}
        else:
            parts = {}
            for t in req.topic_data:
                out = parts.setdefault(t.name, [])
                for p in t.partition_data:
                    out.append(self._produce_partition(broker_id, t.name, p.index, p.records))
        if req.acks == 0:
            # Kafka sends no response to acks=0 (it closes the connection when the append failed, so the
            # producer notices and refreshes metadata: KafkaApis.sendNoOpResponseExemptThrottle / closeConnection)
            if any(p.error_code for ps in parts.values() for p in ps):
                return CLOSE
            return NO_RESPONSE
        return ProduceResponse(responses=[ProduceResponse.Topic(name=n, partition_responses=ps)
                                          for n, ps in parts.items()], throttle_time_ms=0)

    def _produce_partition(self, broker_id: int, topic: str, partition: int, records: Any) -> Any:
        P = ProduceResponse.Topic.Partition
        err = self._leader_error(broker_id, topic, partition)
        if err is not None:
            return P(index=partition, error_code=int(err), base_offset=-1, log_start_offset=-1)
        lg = self.log(topic, partition)
        ps = self.cluster.partition(topic, partition)
        try:
            base, duplicate = lg.append(records, ps.leader_epoch)
        except AppendError as e:
            log.info("produce to %s-%d rejected: %s", topic, partition, e)
            return P(index=partition, error_code=int(e.error), base_offset=-1, log_start_offset=-1,
                     error_message=e.message)
        if not duplicate:
            self._appended.append((topic, partition))
        # v5+ carries log_start_offset (all three clients' decoders expect it)
        return P(index=partition, error_code=0, base_offset=base, log_append_time_ms=-1,
                 log_start_offset=lg.log_start_offset)

    # --- Fetch (KafkaApis.handleFetchRequest -> ReplicaManager.fetchMessages / DelayedFetch) -----------------

    def fetch(self, broker_id: int, req: Any, version: int, may_wait: bool = True) -> Any:
        """The Fetch response, or a :class:`FetchWait` when it should wait (``may_wait``: the fetch's wait is not
        over yet)."""
        resp, total, errors, keys = self._read_fetch(broker_id, req)
        # ReplicaManager.fetchMessages answers at once when the fetch does not want to wait, needs no data, has
        # enough, or hit an error; else DelayedFetch waits for an append or the max wait
        if not may_wait or req.max_wait_ms <= 0 or req.min_bytes <= 0 or total >= req.min_bytes or errors:
            return resp
        # (no partition at all: the delayed fetch just times out)
        return FetchWait(req, version, tuple(keys), req.max_wait_ms)

    def _read_fetch(self, broker_id: int, req: Any) -> tuple[Any, int, bool, list[tuple[str, int]]]:
        T, P = FetchResponse.Topic, FetchResponse.Topic.Partition
        max_bytes = req.max_bytes if req.max_bytes is not None and req.max_bytes > 0 else 0x7FFFFFFF
        budget = max_bytes
        total = 0
        errors = False
        keys: list[tuple[str, int]] = []
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                err = self._leader_error(broker_id, t.topic, p.partition, p.current_leader_epoch)
                if err is not None:
                    errors = True
                    parts.append(P(partition_index=p.partition, error_code=int(err), high_watermark=-1,
                                   last_stable_offset=-1, log_start_offset=-1, records=None))
                    continue
                lg = self.log(t.topic, p.partition)
                hw = lg.high_watermark
                if not lg.log_start_offset <= p.fetch_offset <= hw:
                    errors = True
                    parts.append(P(partition_index=p.partition, error_code=int(E.OFFSET_OUT_OF_RANGE),
                                   high_watermark=hw, last_stable_offset=hw, log_start_offset=lg.log_start_offset,
                                   records=None))
                    continue
                data = b""
                if p.fetch_offset < hw:
                    limit = min(max(p.partition_max_bytes, 0), budget)
                    data = lg.read(p.fetch_offset, limit, min_one=total == 0)
                    budget -= len(data)
                    total += len(data)
                keys.append((t.topic, p.partition))
                parts.append(P(partition_index=p.partition, error_code=0, high_watermark=hw,
                               last_stable_offset=hw, log_start_offset=lg.log_start_offset,
                               aborted_transactions=None, records=data))
            topics.append(T(topic=t.topic, partitions=parts))
        resp = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)
        return resp, total, errors, keys

    # --- ListOffsets (KafkaApis.handleListOffsetRequest -> ReplicaManager.fetchOffsetForTimestamp) -----------

    def list_offsets(self, broker_id: int, req: Any, version: int) -> Any:
        T, P = ListOffsetsResponse.Topic, ListOffsetsResponse.Topic.Partition
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                err = self._leader_error(broker_id, t.name, p.partition_index, p.current_leader_epoch)
                if err is not None:
                    parts.append(P(partition_index=p.partition_index, error_code=int(err), old_style_offsets=[],
                                   timestamp=-1, offset=-1))
                    continue
                lg = self.log(t.name, p.partition_index)
                ps = self.cluster.partition(t.name, p.partition_index)
                ts = p.timestamp
                if ts == LATEST_TIMESTAMP:
                    found = (lg.high_watermark, -1)   # read_committed: the LSO, equal here (no transactions)
                elif ts == EARLIEST_TIMESTAMP:
                    found = (lg.log_start_offset, -1)
                elif ts == MAX_TIMESTAMP and version >= 7:
                    found = lg.max_timestamp() or (-1, -1)
                elif ts < 0:
                    parts.append(P(partition_index=p.partition_index, error_code=int(E.INVALID_REQUEST),
                                   old_style_offsets=[], timestamp=-1, offset=-1))
                    continue
                else:
                    found = lg.offset_for_timestamp(ts) or (-1, -1)
                off, fts = found
                parts.append(P(partition_index=p.partition_index, error_code=0,
                               old_style_offsets=[off] if off >= 0 else [], timestamp=fts, offset=off,
                               leader_epoch=ps.leader_epoch if off >= 0 else -1))
            topics.append(T(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=topics)

    # --- OffsetForLeaderEpoch (KIP-320: Partition.lastOffsetForLeaderEpoch -> LeaderEpochFileCache.endOffsetFor) -

    def offset_for_leader_epoch(self, broker_id: int, req: Any, version: int) -> Any:
        T, P = OffsetForLeaderEpochResponse.Topic, OffsetForLeaderEpochResponse.Topic.Partition
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                err = self._leader_error(broker_id, t.topic, p.partition, p.current_leader_epoch)
                if err is not None:
                    parts.append(P(error_code=int(err), partition=p.partition, leader_epoch=-1, end_offset=-1))
                    continue
                lg = self.log(t.topic, p.partition)
                epoch, end = lg.end_offset_for_epoch(p.leader_epoch, self.cluster.partition(t.topic,
                                                                                             p.partition).leader_epoch)
                parts.append(P(error_code=0, partition=p.partition, leader_epoch=epoch, end_offset=end))
            topics.append(T(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)

    # --- InitProducerId (TransactionCoordinator.handleInitProducerId with a null transactional id) -----------

    def init_producer_id(self, broker_id: int, req: Any, version: int) -> Any:
        if req.transactional_id is not None:
            # kgroup has no transaction coordinator: the request reached a broker that is not one
            return InitProducerIdResponse(throttle_time_ms=0, error_code=int(E.NOT_COORDINATOR), producer_id=-1,
                                          producer_epoch=-1)
        # "if the transactional id is null, then always blindly accept the request and return a new producerId
        # from the producerId manager" -- also for KIP-360's (producer_id, epoch) retries
        pid = self._next_producer_id
        self._next_producer_id += 1
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)

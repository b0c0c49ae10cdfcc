"""The data path of ``kgroup serve``: partition logs, Produce, Fetch, ListOffsets and InitProducerId.

kgroup is a coordination emulator, but a real client will not consume before it can list offsets and fetch, and
kafka-python's producer (idempotent by default) will not produce before InitProducerId. This module gives the
server what Kafka's ``ReplicaManager`` / ``UnifiedLog`` / ``ProducerStateManager`` give a broker, reduced to one
in-process log per partition:

* :class:`PartitionLog` -- ``UnifiedLog``: record batches (RecordBatch v2, kept as the producer's bytes with the
  base offset and partition leader epoch rewritten -- both are outside the CRC, exactly as ``LogValidator``'s
  in-place assignment for uncompressed/compatible batches), log start offset 0, log end offset, high watermark =
  log end offset (every replica is in sync: the replicas share the log), an offset index by bisection and a time
  lookup (``UnifiedLog.fetchOffsetByTimestamp``). With a data directory every appended batch is also written to
  ``<data-dir>/topics/<topic>-<partition>.log`` and read back (with the producer state) on first use after a
  restart.
* :class:`ProducerState` -- ``ProducerStateManager`` / ``ProducerAppendInfo``: per producer id the epoch and the
  metadata of the last five batches (``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``); a retried batch is a
  *duplicate* and is answered with the original offsets and no error (``UnifiedLog.analyzeAndValidateProducerState``
  -> ``findDuplicateBatch``), a sequence gap is ``OUT_OF_ORDER_SEQUENCE_NUMBER``, an older epoch
  ``INVALID_PRODUCER_EPOCH`` (``ProducerAppendInfo.checkProducerEpoch`` / ``checkSequence``).
* :class:`DataPlane` -- the server-side glue (``KafkaApis.handleProduceRequest`` / ``handleFetchRequest`` /
  ``handleListOffsetRequest`` / ``handleInitProducerIdRequest``): leader checks (``NOT_LEADER_OR_FOLLOWER``),
  leader-epoch fencing (KIP-320, ``Partition.checkCurrentLeaderEpoch``), and the Fetch *purgatory*: a fetch that
  has fewer than ``min_bytes`` waits for an append to one of its partitions or for ``max_wait_ms``
  (``DelayedFetch``), without spinning. Because a connection has one request in flight (Kafka's muted channel), a
  parked fetch holds back that connection only -- as on Kafka.

Fetch sessions (KIP-227) are not created: every response carries ``session_id = 0``, which tells the client the
broker did not open a session, so it keeps sending full fetches (``FetchSessionHandler``) -- what a broker with
``max.incremental.fetch.session.cache.slots = 0`` does.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from protocol.api import ApiKey
from protocol.crc32c import crc32c
from protocol.errors import ErrorCode
from protocol.messages import (FetchResponse, InitProducerIdResponse, ListOffsetsResponse,  # type: ignore
                               OffsetForLeaderEpochResponse, ProduceResponse)
from protocol.records import decode_batches

E = ErrorCode
log = logging.getLogger("kgroup.datapath")

#: The data-path APIs the server routes here.
DATA_APIS: frozenset[int] = frozenset({int(ApiKey.PRODUCE), int(ApiKey.FETCH), int(ApiKey.LIST_OFFSETS),
                                       int(ApiKey.INIT_PRODUCER_ID), int(ApiKey.OFFSET_FOR_LEADER_EPOCH)})

#: Returned by :meth:`DataPlane.handle` when Kafka sends no response (Produce with acks=0).
NO_RESPONSE = object()

# ListOffsets special timestamps (ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

_HDR = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header (see protocol/records.py)
_BATCHES_TO_RETAIN = 5                  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_INT32_MAX = 2**31 - 1


class AppendError(Exception):
    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message or None


@dataclass
class BatchInfo:
    """What the log keeps about one stored batch (the bytes plus the header fields lookups need)."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes                     # the complete batch, base offset and leader epoch already assigned
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_control: bool = False


@dataclass
class _ProducerEntry:
    epoch: int
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)  # (first seq, last seq, first, last off)

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class ProducerState:
    """``ProducerStateManager`` for idempotent (non-transactional) producers of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, _ProducerEntry] = {}

    def check(self, pid: int, epoch: int, first_seq: int, last_seq: int) -> tuple[int, int] | None:
        """Validate an idempotent batch; returns the original (first, last) offsets of a duplicate, or None.
        Raises AppendError(INVALID_PRODUCER_EPOCH / OUT_OF_ORDER_SEQUENCE_NUMBER) as ``ProducerAppendInfo``."""
        cur = self.producers.get(pid)
        if cur is None:
            # No state for this producer (new, or its batches were removed): any sequence is accepted
            # (ProducerAppendInfo.checkSequence: currentEntry.producerEpoch == NO_PRODUCER_EPOCH).
            return None
        if epoch < cur.epoch:  # checkProducerEpoch
            raise AppendError(E.INVALID_PRODUCER_EPOCH,
                              f"epoch {epoch} of producer {pid} is older than the current epoch {cur.epoch}")
        if epoch == cur.epoch:
            for fs, ls, fo, lo in cur.batches:  # ProducerStateEntry.findDuplicateBatch
                if fs == first_seq and ls == last_seq:
                    return fo, lo
        if epoch != cur.epoch:
            if first_seq != 0:
                raise AppendError(E.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                  f"invalid sequence number for new epoch {epoch} of producer {pid}: {first_seq} "
                                  "(request epoch), 0 (expected)")
            return None
        last = cur.last_seq
        if not (first_seq == last + 1 or (first_seq == 0 and last == _INT32_MAX)):  # inSequence
            raise AppendError(E.OUT_OF_ORDER_SEQUENCE_NUMBER,
                              f"out of order sequence number for producer {pid} at offset: {first_seq} "
                              f"(incoming seq. number), {last} (current end sequence number)")
        return None

    def update(self, pid: int, epoch: int, first_seq: int, last_seq: int, first_off: int, last_off: int) -> None:
        cur = self.producers.get(pid)
        if cur is None or cur.epoch != epoch:
            cur = self.producers[pid] = _ProducerEntry(epoch)
        cur.batches.append((first_seq, last_seq, first_off, last_off))
        if len(cur.batches) > _BATCHES_TO_RETAIN:
            del cur.batches[0]


class PartitionLog:
    """One partition's log (``UnifiedLog`` without segments, retention or compaction)."""

    def __init__(self, topic: str, partition: int, path: str | None = None, fsync: str = "batch") -> None:
        self.topic = topic
        self.partition = partition
        self.batches: list[BatchInfo] = []
        self._last_offsets: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.producers = ProducerState()
        self.path = path
        self.fsync = fsync
        self._file = None
        if path is not None:
            self._load(path)
            self._file = open(path, "ab")

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset  # every replica shares the log: ISR always caught up

    def size_bytes(self) -> int:
        return sum(len(b.data) for b in self.batches)

    # --- append ----------------------------------------------------------------------------------------------

    def append(self, records: bytes, leader_epoch: int) -> tuple[int, bool]:
        """Append the batches of a Produce request's ``records``; returns (base offset, duplicate)."""
        raw = bytes(records or b"")
        parsed = _split_batches(raw)
        if len(parsed) != 1:
            # ProduceRequest.validateRecords: v3+ needs exactly one batch per partition
            raise AppendError(E.INVALID_RECORD, "Produce requests with version 3 and above must contain exactly "
                                                "one record batch per partition")
        hdr, data = parsed[0]
        (_, _, _, magic, crc, attrs, last_delta, _base_ts, max_ts, pid, pepoch, base_seq, count) = hdr
        if magic != 2:
            raise AppendError(E.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic} is not supported")
        if crc32c(data[21:]) != crc:  # DefaultRecordBatch.ensureValid
            raise AppendError(E.CORRUPT_MESSAGE, "record batch CRC mismatch")
        if attrs & 0x10:
            # kgroup has no transaction coordinator (FindCoordinator for transactions says so)
            raise AppendError(E.INVALID_TXN_STATE, "transactional batches are not supported by kgroup")
        if attrs & 0x20:
            raise AppendError(E.INVALID_RECORD, "clients may not write control batches")
        if count <= 0 or last_delta < 0:
            raise AppendError(E.INVALID_RECORD, "a batch must contain at least one record")
        if (attrs & 0x07) in (0, 1):  # we can read none and gzip: validate the records as LogValidator does
            try:
                decode_batches(data)
            except Exception as e:  # noqa: BLE001 - ProtocolError or a codec error
                raise AppendError(E.CORRUPT_MESSAGE, f"corrupt record batch: {e}") from None
        if pid >= 0:
            last_seq = base_seq + last_delta
            if last_seq > _INT32_MAX:
                last_seq -= _INT32_MAX + 1
            dup = self.producers.check(pid, pepoch, base_seq, last_seq)
            if dup is not None:
                return dup[0], True
        base = self.log_end_offset
        buf = bytearray(data)
        struct.pack_into(">q", buf, 0, base)
        struct.pack_into(">i", buf, 12, leader_epoch)
        info = BatchInfo(base, base + last_delta, max_ts, bytes(buf), pid, pepoch, base_seq)
        self._store(info)
        if self._file is not None:
            self._file.write(info.data)
            self._file.flush()
            if self.fsync != "never":
                os.fsync(self._file.fileno())
        return base, False

    def _store(self, info: BatchInfo) -> None:
        self.batches.append(info)
        self._last_offsets.append(info.last_offset)
        self.log_end_offset = info.last_offset + 1
        if info.producer_id >= 0 and not info.is_control:
            last_seq = info.base_sequence + (info.last_offset - info.base_offset)
            self.producers.update(info.producer_id, info.producer_epoch, info.base_sequence, last_seq,
                                  info.base_offset, info.last_offset)

    def _load(self, path: str) -> None:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return
        for hdr, data in _split_batches(raw, tolerate_tail=True):
            base, _, _, _, _, attrs, last_delta, _, max_ts, pid, pepoch, base_seq, _ = hdr
            self._store(BatchInfo(base, base + last_delta, max_ts, data, pid, pepoch, base_seq, bool(attrs & 0x20)))
        good = sum(len(d) for _, d in _split_batches(raw, tolerate_tail=True))
        if good != len(raw):  # a torn write at the tail (crash during append): drop it, as log recovery does
            with open(path, "r+b") as f:
                f.truncate(good)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    # --- read ------------------------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, min_one: bool) -> bytes:
        """Batches from the one containing ``offset`` up to ``max_bytes`` (at least one batch when ``min_one``,
        KIP-74); the caller checked that ``log_start_offset <= offset <= log_end_offset``."""
        i = bisect.bisect_left(self._last_offsets, offset)
        out = bytearray()
        while i < len(self.batches):
            d = self.batches[i].data
            if out or not min_one:
                if len(out) + len(d) > max_bytes:
                    break
            out += d
            i += 1
        return bytes(out)

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """``UnifiedLog.fetchOffsetByTimestamp``: the first offset whose timestamp is >= ts, with that timestamp."""
        for b in self.batches:
            if b.is_control or b.max_timestamp < ts:
                continue
            try:
                recs = [r for bb in decode_batches(b.data) for r in bb.records]
            except Exception:  # noqa: BLE001 - a codec we cannot read: batch granularity
                return b.base_offset, b.max_timestamp
            for r in recs:
                if r.timestamp >= ts:
                    return r.offset, r.timestamp
        return None

    def epoch_entries(self, current_epoch: int) -> list[tuple[int, int]]:
        """``LeaderEpochFileCache``: (epoch, start offset) of every leader epoch that wrote to the log, plus the
        current leader's (``Partition.makeLeader`` assigns it at the log end offset)."""
        entries: list[tuple[int, int]] = []
        for b in self.batches:
            (e,) = struct.unpack_from(">i", b.data, 12)
            if e >= 0 and (not entries or e > entries[-1][0]):
                entries.append((e, b.base_offset))
        if current_epoch >= 0 and (not entries or current_epoch > entries[-1][0]):
            entries.append((current_epoch, self.log_end_offset))
        return entries

    def end_offset_for_epoch(self, requested: int, current_epoch: int) -> tuple[int, int]:
        """``LeaderEpochFileCache.endOffsetFor``: (the largest epoch <= requested, the start offset of the next
        epoch -- or the log end offset when the requested epoch is the latest); (-1, -1) if unknown."""
        if requested < 0:
            return -1, -1
        entries = self.epoch_entries(current_epoch)
        if entries and entries[-1][0] == requested:
            return requested, self.log_end_offset
        higher = next((e for e in entries if e[0] > requested), None)
        if higher is None:
            return -1, -1
        floor = [e for e in entries if e[0] <= requested]
        return (floor[-1][0] if floor else requested), higher[1]

    def max_timestamp(self) -> tuple[int, int] | None:
        """KIP-734: the offset and timestamp of the record with the largest timestamp (the first such)."""
        best: tuple[int, int] | None = None
        for b in self.batches:
            if b.is_control:
                continue
            if best is None or b.max_timestamp > best[1]:
                try:
                    recs = [r for bb in decode_batches(b.data) for r in bb.records]
                    r = max(recs, key=lambda r: (r.timestamp, -r.offset))
                    best = (r.offset, r.timestamp)
                except Exception:  # noqa: BLE001
                    best = (b.last_offset, b.max_timestamp)
        return best


def _split_batches(raw: bytes, tolerate_tail: bool = False) -> list[tuple[tuple, bytes]]:
    out = []
    pos, n = 0, len(raw)
    while n - pos >= 12:
        (length,) = struct.unpack_from(">i", raw, pos + 8)
        end = pos + 12 + length
        if length < 49 or end > n:
            if tolerate_tail:
                break
            raise AppendError(E.CORRUPT_MESSAGE, "truncated or corrupt record batch")
        out.append((_HDR.unpack_from(raw, pos), raw[pos:end]))
        pos = end
    if pos != n and not tolerate_tail:
        raise AppendError(E.CORRUPT_MESSAGE, "trailing bytes after the last record batch")
    return out


class DataPlane:
    """The server's data path (one per :class:`broker.server.KGroupServer`)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.cluster = server.cluster
        s = server.settings
        self.data_dir = os.path.join(s.data_dir, "topics") if s.data_dir else None
        self.fsync = s.fsync
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self._waiters: dict[tuple[str, int], list[asyncio.Future]] = {}
        self._next_producer_id = 1000 + int(time.time()) % 100000 * 1000  # ProducerIdManager blocks

    # --- logs ------------------------------------------------------------------------------------------------

    def log(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        lg = self.logs.get(key)
        if lg is None:
            path = None
            if self.data_dir:
                os.makedirs(self.data_dir, exist_ok=True)
                path = os.path.join(self.data_dir, f"{topic}-{partition}.log")
            lg = self.logs[key] = PartitionLog(topic, partition, path, self.fsync)
        return lg

    def close(self) -> None:
        for lg in self.logs.values():
            lg.close()
        for futs in self._waiters.values():
            for f in futs:
                if not f.done():
                    f.cancel()
        self._waiters.clear()

    def _wake(self, key: tuple[str, int]) -> None:
        for f in self._waiters.pop(key, ()):
            if not f.done():
                f.set_result(None)

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

    async def handle(self, conn: Any, body: Any, version: int, header: Any) -> Any:
        name = type(body).__name__
        b = conn.broker_id
        if name == "ProduceRequest":
            return self.produce(b, body, version)
        if name == "FetchRequest":
            return await self.fetch(b, body, version)
        if name == "ListOffsetsRequest":
            return self.list_offsets(b, body, version)
        if name == "InitProducerIdRequest":
            return self.init_producer_id(body, version)
        if name == "OffsetForLeaderEpochRequest":
            return self.offset_for_leader_epoch(b, body, version)
        raise ValueError(f"not a data-path request: {name}")

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
                return None
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
            base, _dup = lg.append(records, ps.leader_epoch)
        except AppendError as e:
            log.info("produce to %s-%d rejected: %s", topic, partition, e)
            return P(index=partition, error_code=int(e.error), base_offset=-1, log_start_offset=-1,
                     error_message=e.message)
        self._wake((topic, partition))
        # v5+ carries log_start_offset (all three clients' decoders expect it)
        return P(index=partition, error_code=0, base_offset=base, log_append_time_ms=-1,
                 log_start_offset=lg.log_start_offset)

    # --- Fetch (KafkaApis.handleFetchRequest -> ReplicaManager.fetchMessages / DelayedFetch) -----------------

    async def fetch(self, broker_id: int, req: Any, version: int) -> Any:
        loop = asyncio.get_running_loop()
        max_wait = max(0, req.max_wait_ms) / 1000.0
        deadline = loop.time() + max_wait
        while True:
            resp, total, errors, keys = self._read_fetch(broker_id, req)
            remaining = deadline - loop.time()
            # ReplicaManager.fetchMessages answers at once when the fetch does not want to wait, needs no data,
            # has enough, or hit an error; else DelayedFetch waits for an append or the max wait
            if remaining <= 0 or req.min_bytes <= 0 or total >= req.min_bytes or errors:
                return resp
            if not keys:  # nothing fetchable at all (no partitions): the delayed fetch just times out
                await asyncio.sleep(remaining)
                return resp
            fut = loop.create_future()
            for k in keys:
                self._waiters.setdefault(k, []).append(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except asyncio.TimeoutError:
                pass
            finally:
                for k in keys:
                    lst = self._waiters.get(k)
                    if lst and fut in lst:
                        lst.remove(fut)
            if not self.cluster.is_alive(broker_id):
                return None

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

    def init_producer_id(self, req: Any, version: int) -> Any:
        if req.transactional_id is not None:
            # kgroup has no transaction coordinator: the request reached a broker that is not one
            return InitProducerIdResponse(throttle_time_ms=0, error_code=int(E.NOT_COORDINATOR), producer_id=-1,
                                          producer_epoch=-1)
        # "if the transactional id is null, then always blindly accept the request and return a new producerId
        # from the producerId manager" -- also for KIP-360's (producer_id, epoch) retries
        pid = self._next_producer_id
        self._next_producer_id += 1
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)

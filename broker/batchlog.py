"""The log of one topic partition's record batches, sans-IO: what Kafka's ``UnifiedLog`` and
``ProducerStateManager`` keep, reduced to one in-memory list per partition.

* :class:`RecordBatchLog` -- ``UnifiedLog`` without segments, retention or compaction: record batches
  (RecordBatch v2, kept as the producer's bytes with the base offset and partition leader epoch rewritten -- both
  are outside the CRC, exactly as ``LogValidator``'s in-place assignment for uncompressed/compatible batches), log
  start offset 0, log end offset, high watermark = log end offset (every replica is in sync: the replicas share
  the log). Lookups are indexed, maintained on append, so no request decodes more than one batch: the offset
  index (the batches' last offsets, by bisection), a time index (``TimeIndex``: the running maximum of the
  batches' max timestamps, by bisection, for ``UnifiedLog.fetchOffsetByTimestamp``), the batch holding the
  largest timestamp (``maxTimestampSoFar`` / ``offsetOfMaxTimestampSoFar``, KIP-734) and the leader epoch
  entries (``LeaderEpochFileCache``).
* :class:`ProducerState` -- ``ProducerStateManager`` / ``ProducerAppendInfo``: per producer id the epoch and the
  metadata of the last five batches (``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``); a retried batch is a
  *duplicate* and is answered with the original offsets and no error (``UnifiedLog.analyzeAndValidateProducerState``
  -> ``findDuplicateBatch``), a sequence gap is ``OUT_OF_ORDER_SEQUENCE_NUMBER``, an older epoch
  ``INVALID_PRODUCER_EPOCH`` (``ProducerAppendInfo.checkProducerEpoch`` / ``checkSequence``).

Persistence is the driver's, as for the offsets log (``coordinator/log.py``): a log may be given the bytes a
previous run stored (``stored``: whole batches, already checked by :func:`recover_batches`, Kafka's log recovery:
every batch's length, magic and CRC; a corrupt region in the middle is skipped and reported, a torn tail is cut
off) and a ``writer`` that receives every appended batch. The files are ``broker/storage.py``'s.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import Protocol

from protocol.crc32c import crc32c
from protocol.errors import ErrorCode
from protocol.records import decode_batches

E = ErrorCode

_HDR = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header (see protocol/records.py)
_EPOCH = struct.Struct(">i")            # partition leader epoch, at byte 12
_BATCHES_TO_RETAIN = 5                  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_INT32_MAX = 2**31 - 1


class AppendError(Exception):
    """An append Kafka refuses, with the error code of the partition's Produce answer."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message or None


class BatchWriter(Protocol):
    """Where a log's appended batches go (a file, in ``kgroup serve --data-dir``): durable when ``write``
    returns."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


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


class RecordBatchLog:
    """One topic partition's log of record batches (``UnifiedLog`` without segments, retention or compaction)."""

    def __init__(self, topic: str, partition: int, stored: bytes = b"", writer: BatchWriter | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.batches: list[BatchInfo] = []
        self._last_offsets: list[int] = []     # the offset index
        self._time_index: list[int] = []       # running max of the batches' max timestamps (non-decreasing)
        self._max_ts_batch = -1                # the first batch holding the largest timestamp
        self._max_ts_record: tuple[int, int] | None = None  # its record (offset, timestamp), once looked up
        self._epochs: list[tuple[int, int]] = []  # (leader epoch, start offset), LeaderEpochFileCache
        self._size = 0
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.producers = ProducerState()
        self.writer = writer
        for hdr, data in split_batches(stored, tolerate_tail=True):  # log recovery: the producer state too
            base, _, _, _, _, attrs, last_delta, _, max_ts, pid, pepoch, base_seq, _ = hdr
            self._store(BatchInfo(base, base + last_delta, max_ts, data, pid, pepoch, base_seq, bool(attrs & 0x20)))

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset  # every replica shares the log: ISR always caught up

    def size_bytes(self) -> int:
        return self._size

    # --- append ----------------------------------------------------------------------------------------------

    def append(self, records: bytes, leader_epoch: int) -> tuple[int, bool]:
        """Append the batches of a Produce request's ``records``; returns (base offset, duplicate)."""
        raw = bytes(records or b"")
        parsed = split_batches(raw)
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
        if self.writer is not None:
            self.writer.write(info.data)
        return base, False

    def _store(self, info: BatchInfo) -> None:
        i = len(self.batches)
        self.batches.append(info)
        self._last_offsets.append(info.last_offset)
        self._size += len(info.data)
        ts = info.max_timestamp if not info.is_control else -1
        top = self._time_index[-1] if self._time_index else -1
        self._time_index.append(max(top, ts))
        if not info.is_control and (self._max_ts_batch < 0 or ts > self.batches[self._max_ts_batch].max_timestamp):
            self._max_ts_batch = i
            self._max_ts_record = None
        (epoch,) = _EPOCH.unpack_from(info.data, 12)
        if epoch >= 0 and (not self._epochs or epoch > self._epochs[-1][0]):
            self._epochs.append((epoch, info.base_offset))
        self.log_end_offset = info.last_offset + 1
        if info.producer_id >= 0 and not info.is_control:
            last_seq = info.base_sequence + (info.last_offset - info.base_offset)
            self.producers.update(info.producer_id, info.producer_epoch, info.base_sequence, last_seq,
                                  info.base_offset, info.last_offset)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

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
        """``UnifiedLog.fetchOffsetByTimestamp``: the first offset whose timestamp is >= ts, with that timestamp.
        The time index finds the first batch whose max timestamp is >= ts; only that batch is decoded."""
        i = bisect.bisect_left(self._time_index, ts)
        if i >= len(self.batches):
            return None
        b = self.batches[i]
        try:
            recs = [r for bb in decode_batches(b.data) for r in bb.records]
        except Exception:  # noqa: BLE001 - a codec we cannot read: batch granularity
            return b.base_offset, b.max_timestamp
        for r in recs:
            if r.timestamp >= ts:
                return r.offset, r.timestamp
        return b.base_offset, b.max_timestamp  # (a batch header claiming a larger max than its records)

    def epoch_entries(self, current_epoch: int) -> list[tuple[int, int]]:
        """``LeaderEpochFileCache``: (epoch, start offset) of every leader epoch that wrote to the log, plus the
        current leader's (``Partition.makeLeader`` assigns it at the log end offset)."""
        entries = list(self._epochs)
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
        """KIP-734: the offset and timestamp of the record with the largest timestamp (the first such): the batch
        is maintained on append; its records are decoded once."""
        if self._max_ts_batch < 0:
            return None
        if self._max_ts_record is None:
            b = self.batches[self._max_ts_batch]
            try:
                recs = [r for bb in decode_batches(b.data) for r in bb.records]
                r = max(recs, key=lambda r: (r.timestamp, -r.offset))
                self._max_ts_record = (r.offset, r.timestamp)
            except Exception:  # noqa: BLE001
                self._max_ts_record = (b.last_offset, b.max_timestamp)
        return self._max_ts_record


def split_batches(raw: bytes, tolerate_tail: bool = False) -> list[tuple[tuple, bytes]]:
    """(header fields, batch bytes) of every whole batch in ``raw``. A truncated or trailing remainder raises
    AppendError(CORRUPT_MESSAGE), or with ``tolerate_tail`` (log recovery) is left out."""
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


@dataclass
class Recovery:
    """What :func:`recover_batches` found in a stored log: the valid batches (byte ranges, in order), the corrupt
    regions between valid batches (skipped), and where an invalid tail starts (None: the file ends with a whole
    batch)."""

    batches: list[tuple[int, int]]
    corrupt: list[tuple[int, int]]
    torn_at: int | None

    def valid_bytes(self, raw: bytes) -> bytes:
        return b"".join(raw[a:b] for a, b in self.batches)


def _valid_batch_at(raw: bytes, pos: int, min_base: int) -> int:
    """The end of the valid batch starting at ``pos`` (its length, magic, CRC-32C and a base offset not below
    ``min_base``: Kafka's ``LogSegment.recover`` -> ``DefaultRecordBatch.ensureValid``), or -1."""
    n = len(raw)
    if n - pos < _HDR.size:
        return -1
    base, length, _, magic, crc, _, last_delta, _, _, _, _, _, count = _HDR.unpack_from(raw, pos)
    end = pos + 12 + length
    if length < 49 or end > n or magic != 2 or base < min_base or last_delta < 0 or count < 0:
        return -1
    if crc32c(raw[pos + 21:end]) != crc:
        return -1
    return end


def recover_batches(raw: bytes) -> Recovery:
    """Kafka's log recovery over a stored topic log, made to lose as little as possible: every batch is checked
    (length, magic, CRC, offsets that only go up); at an invalid batch the scan looks for the next valid one --
    found: the bytes in between are a corrupt region, reported and skipped, the batches after it kept (never
    deleted with everything after it); not found: the rest is a torn tail (a write cut short by a crash)."""
    batches: list[tuple[int, int]] = []
    corrupt: list[tuple[int, int]] = []
    pos, n, min_base = 0, len(raw), 0
    while pos < n:
        end = _valid_batch_at(raw, pos, min_base)
        if end < 0:
            nxt = _resync(raw, pos + 1, min_base)
            if nxt < 0:
                return Recovery(batches, corrupt, pos)
            corrupt.append((pos, nxt))
            pos = nxt
            continue
        batches.append((pos, end))
        (last_delta,) = struct.unpack_from(">i", raw, pos + 23)
        min_base = struct.unpack_from(">q", raw, pos)[0] + last_delta + 1
        pos = end
    return Recovery(batches, corrupt, None)


def _resync(raw: bytes, start: int, min_base: int) -> int:
    """The first position >= start where a valid batch begins (its magic byte 2 is at +16), or -1."""
    q = raw.find(b"\x02", start + 16)
    while q >= 0:
        pos = q - 16
        if _valid_batch_at(raw, pos, min_base) >= 0:
            return pos
        q = raw.find(b"\x02", q + 1)
    return -1


def valid_prefix_length(raw: bytes) -> int:
    """How many leading bytes of a stored log are whole batches (a torn write at the tail -- a crash during an
    append -- is what log recovery cuts off)."""
    return sum(len(d) for _, d in split_batches(raw, tolerate_tail=True))

"""Kafka record batches, message format v2 (magic 2), sans-IO.

Mirrors ``org.apache.kafka.common.record.DefaultRecordBatch`` / ``DefaultRecord`` (KIP-98 format) and the batch
iteration of ``MemoryRecords`` / ``ByteBufferLogInputStream``.  A Produce request's ``records`` field and a Fetch
response's ``records`` field are a *MemoryRecords* buffer: zero or more record batches back to back.

Batch layout (61-byte header, big-endian)::

    offset  field                  type
    0       baseOffset             int64
    8       batchLength            int32   bytes after this field (so the batch is 12 + batchLength bytes)
    12      partitionLeaderEpoch   int32
    16      magic                  int8    2
    17      crc                    uint32  CRC-32C of everything from attributes to the end of the batch
    21      attributes             int16   bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
                                           bit 3 timestampType (1 = LogAppendTime), bit 4 isTransactional,
                                           bit 5 isControl, bit 6 hasDeleteHorizonMs (KIP-534)
    23      lastOffsetDelta        int32
    27      baseTimestamp          int64   (the delete horizon when bit 6 is set)
    35      maxTimestamp           int64
    43      producerId             int64
    51      producerEpoch          int16
    53      baseSequence           int32
    57      recordsCount           int32
    61      records...                     (compressed as one block when a codec is set)

Each record: ``length`` varint (bytes after it), ``attributes`` int8 (unused, 0), ``timestampDelta`` varlong,
``offsetDelta`` varint, key (varint length, -1 = null), value (likewise), header count varint, then per header a
key (varint length + UTF-8, never null) and a value (varint length, -1 = null).

Decoding follows Kafka:

* the batch iteration stops quietly at a *partial trailing batch*: a Fetch response may be cut at
  ``max_bytes``, so the last batch can be truncated; Kafka's ``ByteBufferLogInputStream.nextBatch`` returns null
  when fewer than the batch's ``12 + batchLength`` bytes (or fewer than the 17 header bytes up to ``magic``)
  remain, and clients drop the tail.  We do the same (``decode_batches`` returns the complete batches only);
* a ``batchLength`` below the minimum record overhead (14) is corrupt (Kafka's CorruptRecordException), as is a
  v2 batch shorter than its 61-byte header;
* the CRC is verified before anything else is read (``DefaultRecordBatch.ensureValid``); a mismatch raises;
* a record whose declared length differs from the bytes its fields used, a negative header count or header key
  length, or bytes left over after ``recordsCount`` records, are corrupt (``DefaultRecord.readFrom`` and the
  batch's record iterator);
* with ``LogAppendTime`` every record's timestamp is the batch's ``maxTimestamp`` (``DefaultRecordBatch``
  passes ``logAppendTime`` to ``DefaultRecord.readFrom``); otherwise it is ``baseTimestamp + timestampDelta``;
* header keys are decoded as UTF-8 with replacement of malformed sequences (Java's ``new String(bytes, UTF_8)``
  never fails).

Compression: none, and gzip (codec 1, RFC 1952 framing like Java's ``GZIPOutputStream``) through the stdlib's
zlib, both ways; decompression is bounded by ``max_uncompressed_size`` so a small hostile batch cannot make us
allocate without limit.  snappy, lz4 and zstd raise ``ProtocolError("compression codec X not supported")``
(kafka-python producers default to no compression).  Legacy message formats (magic 0 and 1) are not decoded:
they raise a ProtocolError naming the magic.

Every failure while decoding untrusted bytes is a :class:`~protocol.exceptions.ProtocolError`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from protocol.crc32c import crc32c
from protocol.exceptions import ProtocolError
from protocol.types import read_varint, read_varlong, write_varint, write_varlong

MAGIC_V2 = 2

# Compression codecs (attributes bits 0-2), Kafka's CompressionType ids.
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# TimestampType
CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40

LOG_OVERHEAD = 12                 # baseOffset + batchLength
HEADER_SIZE_UP_TO_MAGIC = 17      # ... + partitionLeaderEpoch + magic
RECORD_BATCH_OVERHEAD = 61        # full v2 header
MIN_RECORD_OVERHEAD = 14          # LegacyRecord.RECORD_OVERHEAD_V0: the smallest batchLength Kafka accepts
_ATTRIBUTES_OFFSET = 21
_CRC_OFFSET = 17
_MIN_RECORD_SIZE = 7              # length, attributes, ts delta, offset delta, key len, value len, header count

DEFAULT_MAX_UNCOMPRESSED_SIZE = 64 * 1024 * 1024

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == RECORD_BATCH_OVERHEAD
_INT32_AT = struct.Struct(">i")


@dataclass
class Record:
    """One record with its absolute offset and timestamp (the batch's base plus the record's deltas)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass
class RecordBatch:
    """A v2 record batch.

    For :func:`encode_batch` the derived header fields may be left ``None``: ``last_offset_delta`` becomes the
    highest record offset minus ``base_offset`` (0 for an empty batch), ``base_timestamp`` the first record's
    timestamp and ``max_timestamp`` the largest record timestamp (both -1, NO_TIMESTAMP, for an empty batch),
    which is what Kafka's ``MemoryRecordsBuilder`` writes.  :func:`decode_batches` fills every field, and ``crc``
    with the checksum found on the wire (it is ignored when encoding).
    """

    base_offset: int = 0
    records: list[Record] = field(default_factory=list)
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    compression: int = COMPRESSION_NONE
    timestamp_type: int = CREATE_TIME
    is_transactional: bool = False
    is_control: bool = False
    has_delete_horizon: bool = False
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    last_offset_delta: int | None = None
    base_timestamp: int | None = None
    max_timestamp: int | None = None
    crc: int | None = None
    magic: int = MAGIC_V2

    @property
    def attributes(self) -> int:
        return _attributes(self)

    @property
    def last_offset(self) -> int:
        return self.base_offset + _last_offset_delta(self)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def delete_horizon_ms(self) -> int | None:
        """``DefaultRecordBatch.deleteHorizonMs``: the base timestamp when bit 6 is set."""
        return self.base_timestamp if self.has_delete_horizon else None


def _attributes(batch: RecordBatch) -> int:
    codec = batch.compression
    if codec not in _CODEC_NAMES:
        raise ProtocolError(f"unknown compression codec id {codec}")
    attrs = codec
    if batch.timestamp_type == LOG_APPEND_TIME:
        attrs |= _TIMESTAMP_TYPE_MASK
    elif batch.timestamp_type != CREATE_TIME:
        raise ProtocolError(f"unknown timestamp type {batch.timestamp_type}")
    if batch.is_transactional:
        attrs |= _TRANSACTIONAL_MASK
    if batch.is_control:
        attrs |= _CONTROL_MASK
    if batch.has_delete_horizon:
        attrs |= _DELETE_HORIZON_MASK
    return attrs


def _last_offset_delta(batch: RecordBatch) -> int:
    if batch.last_offset_delta is not None:
        return batch.last_offset_delta
    if not batch.records:
        return 0
    return max(r.offset for r in batch.records) - batch.base_offset


# --- encoding ----------------------------------------------------------------------------------------------------

def _encode_utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except (UnicodeEncodeError, AttributeError) as exc:
        raise ProtocolError(f"header key is not encodable as UTF-8: {s!r}") from exc


def _write_record(out: bytearray, record: Record, base_offset: int, base_timestamp: int) -> None:
    body = bytearray(b"\x00")  # attributes: unused in v2
    write_varlong(body, record.timestamp - base_timestamp)
    write_varint(body, record.offset - base_offset)
    for blob in (record.key, record.value):
        if blob is None:
            body.append(0x01)  # zig-zag(-1)
        else:
            write_varint(body, len(blob))
            body += blob
    write_varint(body, len(record.headers))
    for hkey, hvalue in record.headers:
        if hkey is None:
            raise ProtocolError("record header key must not be null")
        raw = _encode_utf8(hkey)
        write_varint(body, len(raw))
        body += raw
        if hvalue is None:
            body.append(0x01)
        else:
            write_varint(body, len(hvalue))
            body += hvalue
    write_varint(out, len(body))
    out += body


def _gzip_compress(data: bytes) -> bytes:
    # wbits=31: gzip (RFC 1952) framing with a zero mtime, so the output is deterministic.
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    return comp.compress(data) + comp.flush()


def encode_batch(batch: RecordBatch) -> bytes:
    """Encode one v2 record batch (header, optional gzip of the records, CRC-32C)."""
    if batch.magic != MAGIC_V2:
        raise ProtocolError(f"only magic 2 record batches can be encoded, not magic {batch.magic}")
    records = batch.records
    base_offset = batch.base_offset
    if batch.base_timestamp is not None:
        base_timestamp = batch.base_timestamp
    else:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if batch.max_timestamp is not None:
        max_timestamp = batch.max_timestamp
    else:
        max_timestamp = max(r.timestamp for r in records) if records else NO_TIMESTAMP
    attrs = _attributes(batch)

    body = bytearray()
    for record in records:
        _write_record(body, record, base_offset, base_timestamp)
    codec = batch.compression
    if codec == COMPRESSION_GZIP:
        payload: bytes | bytearray = _gzip_compress(bytes(body))
    elif codec == COMPRESSION_NONE:
        payload = body
    else:
        raise ProtocolError(f"compression codec {_CODEC_NAMES[codec]} not supported")

    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += payload
    try:
        _HEADER.pack_into(
            out, 0, base_offset, len(out) - LOG_OVERHEAD, batch.partition_leader_epoch, MAGIC_V2, 0, attrs,
            _last_offset_delta(batch), base_timestamp, max_timestamp, batch.producer_id, batch.producer_epoch,
            batch.base_sequence, len(records))
    except struct.error as exc:
        raise ProtocolError(f"record batch header field out of range: {exc}") from exc
    struct.pack_into(">I", out, _CRC_OFFSET, crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))
    return bytes(out)


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    """A MemoryRecords buffer: the encoded batches back to back."""
    return b"".join(encode_batch(b) for b in batches)


# --- decoding ----------------------------------------------------------------------------------------------------

def _gzip_decompress(data, limit: int) -> bytes:
    # wbits=47 (32 + 15): gzip framing (what Kafka's GZIPOutputStream writes), zlib framing also accepted.
    # max_length bounds the output, so a decompression bomb costs at most limit + 1 bytes.
    d = zlib.decompressobj(47)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(f"corrupt gzip record payload: {exc}") from exc
    if len(out) > limit:
        raise ProtocolError(f"gzip record payload inflates beyond the limit of {limit} bytes")
    if not d.eof:
        raise ProtocolError("truncated gzip record payload")
    return out



def _read_varint_bytes(buf, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    """A record's key or value: varint length (-1 for null) then the bytes, which must end by ``end``."""
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > end:
        raise ProtocolError(f"record {what} runs past the end of the record")
    return bytes(buf[pos:pos + n]), pos + n

def _read_records(buf, pos: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  log_append_time: int | None) -> list[Record]:
    if count < 0:
        raise ProtocolError(f"negative record count {count}")
    if count * _MIN_RECORD_SIZE > end - pos:
        raise ProtocolError(f"{count} records cannot fit in the {end - pos} bytes of the batch")
    records: list[Record] = []
    append = records.append
    for _ in range(count):
        length, pos = read_varint(buf, pos)
        start = pos
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise ProtocolError(f"record length {length} runs past the end of the batch")
        if pos >= rec_end:
            raise ProtocolError("empty record")
        pos += 1  # attributes (unused)
        ts_delta, pos = read_varlong(buf, pos)
        offset_delta, pos = read_varint(buf, pos)
        key, pos = _read_varint_bytes(buf, pos, rec_end, "key")
        value, pos = _read_varint_bytes(buf, pos, rec_end, "value")
        n_headers, pos = read_varint(buf, pos)
        if n_headers < 0:
            raise ProtocolError(f"found invalid number of record headers {n_headers}")
        if n_headers * 2 > rec_end - pos:
            raise ProtocolError(f"{n_headers} record headers cannot fit in the record")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(n_headers):
            hk_len, pos = read_varint(buf, pos)
            if hk_len < 0:
                raise ProtocolError(f"invalid negative header key size {hk_len}")
            if pos + hk_len > rec_end:
                raise ProtocolError("header key runs past the end of the record")
            hkey = str(buf[pos:pos + hk_len], "utf-8", "replace")
            pos += hk_len
            hv_len, pos = read_varint(buf, pos)
            if hv_len >= 0:
                if pos + hv_len > rec_end:
                    raise ProtocolError("header value runs past the end of the record")
                hvalue = bytes(buf[pos:pos + hv_len])
                pos += hv_len
            else:
                hvalue = None
            headers.append((hkey, hvalue))
        if pos != rec_end:
            raise ProtocolError(f"invalid record size: expected to read {length} bytes in record payload, "
                                f"but instead read {pos - start}")
        timestamp = log_append_time if log_append_time is not None else base_timestamp + ts_delta
        append(Record(base_offset + offset_delta, timestamp, key, value, headers))
    if pos != end:
        raise ProtocolError("incorrect declared batch size, records still remaining in the batch")
    return records


def _decode_v2(buf, start: int, end: int, verify_crc: bool, max_uncompressed_size: int) -> RecordBatch:
    if end - start < RECORD_BATCH_OVERHEAD:
        raise ProtocolError(f"record batch is corrupt (the size {end - start} is smaller than the minimum "
                            f"allowed overhead {RECORD_BATCH_OVERHEAD})")
    (base_offset, _length, leader_epoch, magic, crc, attrs, last_offset_delta, base_timestamp, max_timestamp,
     producer_id, producer_epoch, base_sequence, count) = _HEADER.unpack_from(buf, start)
    if verify_crc:
        computed = crc32c(memoryview(buf)[start + _ATTRIBUTES_OFFSET:end])
        if computed != crc:
            raise ProtocolError(f"record batch is corrupt (stored crc = {crc}, computed crc = {computed})")
    codec = attrs & _COMPRESSION_MASK
    timestamp_type = LOG_APPEND_TIME if attrs & _TIMESTAMP_TYPE_MASK else CREATE_TIME
    log_append_time = max_timestamp if timestamp_type == LOG_APPEND_TIME else None
    pos = start + RECORD_BATCH_OVERHEAD
    if codec == COMPRESSION_NONE:
        records = _read_records(buf, pos, end, count, base_offset, base_timestamp, log_append_time)
    elif codec == COMPRESSION_GZIP:
        raw = _gzip_decompress(memoryview(buf)[pos:end], max_uncompressed_size)
        records = _read_records(raw, 0, len(raw), count, base_offset, base_timestamp, log_append_time)
    elif codec in _CODEC_NAMES:
        raise ProtocolError(f"compression codec {_CODEC_NAMES[codec]} not supported")
    else:
        raise ProtocolError(f"unknown compression codec id {codec}")
    return RecordBatch(
        base_offset=base_offset,
        records=records,
        partition_leader_epoch=leader_epoch,
        compression=codec,
        timestamp_type=timestamp_type,
        is_transactional=bool(attrs & _TRANSACTIONAL_MASK),
        is_control=bool(attrs & _CONTROL_MASK),
        has_delete_horizon=bool(attrs & _DELETE_HORIZON_MASK),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        crc=crc,
        magic=magic,
    )


def decode_batches(buf, *, verify_crc: bool = True,
                   max_uncompressed_size: int = DEFAULT_MAX_UNCOMPRESSED_SIZE) -> list[RecordBatch]:
    """Decode the complete batches of a MemoryRecords buffer; a partial trailing batch is ignored (see above)."""
    if buf is None:
        return []
    if not isinstance(buf, (bytes, bytearray)):
        buf = bytes(buf)
    batches: list[RecordBatch] = []
    pos = 0
    total = len(buf)
    while total - pos >= LOG_OVERHEAD:
        (batch_length,) = _INT32_AT.unpack_from(buf, pos + 8)
        if batch_length < MIN_RECORD_OVERHEAD:
            raise ProtocolError(f"record size {batch_length} is less than the minimum record overhead "
                                f"({MIN_RECORD_OVERHEAD})")
        end = pos + LOG_OVERHEAD + batch_length
        if total - pos < HEADER_SIZE_UP_TO_MAGIC or end > total:
            break  # partial trailing batch: Kafka's ByteBufferLogInputStream returns null here
        magic = struct.unpack_from(">b", buf, pos + 16)[0]
        if magic != MAGIC_V2:
            if magic in (0, 1):
                raise ProtocolError(f"legacy record format (magic {magic}) is not supported; only magic 2")
            raise ProtocolError(f"unknown record batch magic {magic}")
        batches.append(_decode_v2(buf, pos, end, verify_crc, max_uncompressed_size))
        pos = end
    return batches


def records_of(batches: Sequence[RecordBatch], *, include_control: bool = False) -> list[Record]:
    """All records of ``batches`` in order (control batches -- transaction markers -- skipped by default)."""
    return [r for b in batches if include_control or not b.is_control for r in b.records]

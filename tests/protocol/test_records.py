"""RecordBatch v2: round trips, CRC, MemoryRecords framing, kafka-python as an oracle both ways, fuzzing."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol.crc32c import crc32c
from protocol.exceptions import ProtocolError
from protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CREATE_TIME,
    LOG_APPEND_TIME,
    Record,
    RecordBatch,
    decode_batches,
    encode_batch,
    encode_batches,
    records_of,
)

INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
blobs = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=10), blobs), max_size=3)


@st.composite
def batches(draw, codecs=(COMPRESSION_NONE, COMPRESSION_GZIP)):
    base_offset = draw(st.integers(min_value=0, max_value=1 << 50))
    base_ts = draw(st.integers(min_value=0, max_value=1 << 42))
    n = draw(st.integers(min_value=0, max_value=6))
    records = []
    offset = base_offset
    for _ in range(n):
        offset += draw(st.integers(min_value=0, max_value=3)) if records else 0
        ts = base_ts + draw(st.integers(min_value=-1000, max_value=10**6))
        records.append(Record(offset, ts, draw(blobs), draw(blobs), draw(headers)))
        offset += 1
    return RecordBatch(
        base_offset=base_offset,
        records=records,
        partition_leader_epoch=draw(st.integers(min_value=-1, max_value=(1 << 31) - 1)),
        compression=draw(st.sampled_from(codecs)),
        timestamp_type=CREATE_TIME,
        is_transactional=draw(st.booleans()),
        is_control=False,
        producer_id=draw(st.integers(min_value=-1, max_value=1 << 40)),
        producer_epoch=draw(st.integers(min_value=-1, max_value=32767)),
        base_sequence=draw(st.integers(min_value=-1, max_value=(1 << 31) - 1)),
    )


def _same(decoded: RecordBatch, original: RecordBatch) -> None:
    assert decoded.records == original.records
    for name in ("base_offset", "partition_leader_epoch", "compression", "timestamp_type", "is_transactional",
                 "is_control", "has_delete_horizon", "producer_id", "producer_epoch", "base_sequence"):
        assert getattr(decoded, name) == getattr(original, name), name
    if original.records:
        assert decoded.base_timestamp == original.records[0].timestamp
        assert decoded.max_timestamp == max(r.timestamp for r in original.records)
        assert decoded.last_offset == max(r.offset for r in original.records)
    assert decoded.magic == 2


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_round_trip(batch):
    raw = encode_batch(batch)
    [decoded] = decode_batches(raw)
    _same(decoded, batch)
    assert struct.unpack_from(">I", raw, 17)[0] == decoded.crc == crc32c(raw[21:])
    # decoding then re-encoding is byte-identical (all derived fields are now explicit)
    assert encode_batch(decoded) == raw


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batches(), max_size=4))
def test_memory_records_round_trip(bs):
    raw = encode_batches(bs)
    decoded = decode_batches(raw)
    assert len(decoded) == len(bs)
    for d, b in zip(decoded, bs):
        _same(d, b)


def _sample_batch(n=5, codec=COMPRESSION_NONE, base_offset=100):
    return RecordBatch(
        base_offset=base_offset,
        records=[Record(base_offset + i, 1_700_000_000_000 + i, None if i == 0 else b"k%d" % i, b"v" * (i * 30),
                        [("trace", b"\x01\x02"), ("none", None)] if i % 2 else []) for i in range(n)],
        compression=codec)


def test_header_layout():
    raw = encode_batch(_sample_batch(3))
    (base_offset, batch_len, epoch, magic, crc, attrs, lod, bts, mts, pid, pep, bseq, count) = struct.unpack_from(
        ">qiibIhiqqqhii", raw, 0)
    assert (base_offset, epoch, magic, attrs, lod, count) == (100, -1, 2, 0, 2, 3)
    assert batch_len == len(raw) - 12
    assert (bts, mts) == (1_700_000_000_000, 1_700_000_000_002)
    assert (pid, pep, bseq) == (-1, -1, -1)
    assert crc == crc32c(raw[21:])


def test_empty_batch():
    raw = encode_batch(RecordBatch(base_offset=7, last_offset_delta=4))
    [b] = decode_batches(raw)
    assert b.records == [] and b.last_offset == 11 and b.base_timestamp == -1 and b.max_timestamp == -1
    assert len(raw) == 61


def test_crc_mismatch_raises():
    raw = bytearray(encode_batch(_sample_batch()))
    raw[-1] ^= 0x01
    with pytest.raises(ProtocolError, match="crc"):
        decode_batches(bytes(raw))
    raw = bytearray(encode_batch(_sample_batch()))
    raw[17] ^= 0xFF  # the stored crc itself
    with pytest.raises(ProtocolError, match="crc"):
        decode_batches(bytes(raw))
    # the records are still readable when verification is off
    assert len(decode_batches(bytes(raw), verify_crc=False)[0].records) == 5


def test_attribute_bits():
    b = _sample_batch(2)
    b.is_transactional = True
    b.producer_id, b.producer_epoch, b.base_sequence = 42, 3, 0
    raw = encode_batch(b)
    assert struct.unpack_from(">h", raw, 21)[0] == 0x10
    b2 = RecordBatch(records=[Record(0, 5, b"\x00\x00\x00\x01", None)], is_control=True, is_transactional=True,
                     producer_id=1, producer_epoch=0, has_delete_horizon=True)
    raw2 = encode_batch(b2)
    assert struct.unpack_from(">h", raw2, 21)[0] == 0x10 | 0x20 | 0x40
    [d] = decode_batches(raw2)
    assert d.is_control and d.is_transactional and d.has_delete_horizon and d.delete_horizon_ms == 5
    assert records_of([d]) == [] and len(records_of([d], include_control=True)) == 1


def test_log_append_time_uses_max_timestamp():
    b = _sample_batch(3)
    b.timestamp_type = LOG_APPEND_TIME
    b.max_timestamp = 1_800_000_000_000
    [d] = decode_batches(encode_batch(b))
    assert d.timestamp_type == LOG_APPEND_TIME
    assert struct.unpack_from(">h", encode_batch(b), 21)[0] & 0x08
    assert [r.timestamp for r in d.records] == [1_800_000_000_000] * 3


def test_partial_trailing_batch_is_ignored():
    first = encode_batch(_sample_batch(3, base_offset=0))
    second = encode_batch(_sample_batch(4, base_offset=3))
    whole = first + second
    assert [b.base_offset for b in decode_batches(whole)] == [0, 3]
    for cut in range(len(first), len(whole)):
        decoded = decode_batches(whole[:cut])
        assert [b.base_offset for b in decoded] == [0], cut
    for cut in range(0, len(first)):
        assert decode_batches(first[:cut]) == [], cut


def test_batch_length_below_minimum_is_corrupt():
    raw = bytearray(encode_batch(_sample_batch(1)))
    struct.pack_into(">i", raw, 8, 13)
    with pytest.raises(ProtocolError, match="minimum record overhead"):
        decode_batches(bytes(raw))
    struct.pack_into(">i", raw, 8, 30)  # >= 14 but shorter than a v2 header
    with pytest.raises(ProtocolError, match="overhead"):
        decode_batches(bytes(raw))


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic_is_rejected_by_name(magic):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 16)
    builder.append(0, timestamp=None if magic == 0 else 1000, key=b"k", value=b"v")
    raw = bytes(builder.build())
    with pytest.raises(ProtocolError, match=f"magic {magic}"):
        decode_batches(raw)


def test_unknown_magic_is_rejected():
    raw = bytearray(encode_batch(_sample_batch(1)))
    raw[16] = 3
    with pytest.raises(ProtocolError, match="magic 3"):
        decode_batches(bytes(raw))


def _with_codec(raw: bytes, codec: int) -> bytes:
    buf = bytearray(raw)
    attrs = struct.unpack_from(">h", buf, 21)[0]
    struct.pack_into(">h", buf, 21, (attrs & ~0x07) | codec)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


@pytest.mark.parametrize("codec,name", [(COMPRESSION_SNAPPY, "snappy"), (COMPRESSION_LZ4, "lz4"),
                                        (COMPRESSION_ZSTD, "zstd")])
def test_unsupported_codecs(codec, name):
    raw = _with_codec(encode_batch(_sample_batch(2)), codec)
    with pytest.raises(ProtocolError, match=f"compression codec {name} not supported"):
        decode_batches(raw)
    with pytest.raises(ProtocolError, match=f"compression codec {name} not supported"):
        encode_batch(_sample_batch(2, codec=codec))


def test_unknown_codec_id():
    with pytest.raises(ProtocolError, match="codec"):
        decode_batches(_with_codec(encode_batch(_sample_batch(1)), 6))


def test_gzip_is_rfc1952_and_bounded():
    raw = encode_batch(_sample_batch(20, codec=COMPRESSION_GZIP))
    assert raw[61:63] == b"\x1f\x8b"  # gzip magic, as Java's GZIPOutputStream writes
    [d] = decode_batches(raw)
    assert d.records == _sample_batch(20).records
    with pytest.raises(ProtocolError, match="limit"):
        decode_batches(raw, max_uncompressed_size=100)
    # a "bomb": 10 MB of zeros in a few KB never inflates past the limit
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = comp.compress(bytes(10_000_000)) + comp.flush()
    plain = bytearray(encode_batch(_sample_batch(1)))
    body = plain[:61] + bomb
    struct.pack_into(">i", body, 8, len(body) - 12)
    body = _with_codec(bytes(body), COMPRESSION_GZIP)
    with pytest.raises(ProtocolError, match="limit"):
        decode_batches(body, max_uncompressed_size=1 << 20)


def test_trailing_bytes_after_declared_records_are_corrupt():
    raw = bytearray(encode_batch(_sample_batch(3)))
    struct.pack_into(">i", raw, 57, 2)  # declare one record fewer than present
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with pytest.raises(ProtocolError, match="remaining"):
        decode_batches(bytes(raw))


# --- kafka-python as an oracle ----------------------------------------------------------------------------------

def _kp_build(records, codec=0, producer=(-1, -1, -1), transactional=False):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=producer[0], producer_epoch=producer[1],
                                        base_sequence=producer[2], batch_size=1 << 20)
    for offset, ts, key, value, hdrs in records:
        builder.append(offset, timestamp=ts, key=key, value=value, headers=hdrs)
    return bytes(builder.build())


kp_records = st.lists(
    st.tuples(st.integers(min_value=0, max_value=1 << 40), blobs, blobs,
              st.lists(st.tuples(st.text(max_size=8), blobs), max_size=3)),
    min_size=1, max_size=6)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(kp_records, st.sampled_from([0, 1]), st.booleans())
def test_kafka_python_encodes_kgroup_decodes(recs, codec, transactional):
    rows = [(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    producer = (12345, 2, 17) if transactional else (-1, -1, -1)
    raw = _kp_build(rows, codec, producer, transactional)
    [batch] = decode_batches(raw)
    assert batch.is_transactional == transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.base_offset == 0 and batch.last_offset_delta == len(rows) - 1
    assert batch.compression == DefaultRecordBatch(raw).compression_type
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records] == \
        [(o, ts, k, v, list(h)) for o, ts, k, v, h in rows]


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_kgroup_encodes_kafka_python_decodes(batch):
    raw = encode_batch(batch)
    mr = MemoryRecords(raw)
    kb = mr.next_batch()
    assert kb.validate_crc()
    assert kb.base_offset == batch.base_offset
    assert kb.compression_type == batch.compression
    assert kb.is_transactional == batch.is_transactional
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == \
        (batch.producer_id, batch.producer_epoch, batch.base_sequence)
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kb]
    assert got == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records]
    assert mr.next_batch() is None


def test_kafka_python_memory_records_with_several_batches():
    raw = _kp_build([(0, 10, b"a", b"1", [])]) + _kp_build([(0, 20, b"b", b"2", [])])
    decoded = decode_batches(raw)
    assert [[r.value for r in b.records] for b in decoded] == [[b"1"], [b"2"]]


# --- robustness: only ProtocolError, never another exception -----------------------------------------------------

def _decode_only_protocol_errors(data, **kw):
    try:
        decode_batches(data, **kw)
    except ProtocolError:
        pass


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_protocol_error(data):
    _decode_only_protocol_errors(data)
    _decode_only_protocol_errors(data, verify_crc=False)


@settings(max_examples=200)
@given(st.binary(min_size=49, max_size=300))
def test_arbitrary_bodies_behind_a_plausible_header(body):
    # a valid-looking prefix (length matching, magic 2) so the fuzzer reaches the record parser
    head = struct.pack(">qiib", 0, len(body) + 5, 0, 2)
    _decode_only_protocol_errors(head + body, verify_crc=False)
    fixed = bytearray(head + body)
    struct.pack_into(">I", fixed, 17, crc32c(bytes(fixed[21:])))
    _decode_only_protocol_errors(bytes(fixed))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(batches(), st.data())
def test_mutated_and_truncated_batches(batch, data):
    raw = bytearray(encode_batch(batch))
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    _decode_only_protocol_errors(bytes(raw[:cut]))
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        i = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[i] = data.draw(st.integers(min_value=0, max_value=255))
    _decode_only_protocol_errors(bytes(raw), verify_crc=False)
    _decode_only_protocol_errors(bytes(raw))


def test_encode_rejects_out_of_range_values():
    with pytest.raises(ProtocolError):
        encode_batch(RecordBatch(records=[Record(1 << 40, 0, None, None)]))  # offset delta > int32
    with pytest.raises(ProtocolError):
        encode_batch(RecordBatch(records=[Record(0, 0, None, None, [("\ud800", None)])]))
    with pytest.raises(ProtocolError):
        encode_batch(RecordBatch(partition_leader_epoch=1 << 40))

"""Data-path schemas (Metadata, ListOffsets, Fetch, Produce, InitProducerId): wire details pinned byte by byte.

The generic round trip and the spec conformance tests cover every (API, version); these pin what is specific to
the data path and easy to get subtly wrong: the ``records`` payload inside a flexible Fetch response, tagged
fields (a nullable tagged string in the Fetch v12 request, tagged *structs* in its response), Produce v9's
compact encodings and tagged sections, Metadata v13's trailing top-level error code, and the v0-only fields of
ListOffsets. Expected bytes are written out by hand from Kafka's JSON specs, not produced by the codec under test.
"""

from __future__ import annotations

import struct
import uuid

import pytest

import protocol.messages  # noqa: F401  (registers every API)
from protocol.api import APIS
from protocol.exceptions import ProtocolError
from protocol.messages.data import Fetch, InitProducerId, ListOffsets, Metadata, Produce

# --- hand encoders (independent of protocol.schema) -------------------------------------------------------------


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def cstr(s: str | None) -> bytes:  # compact (nullable) string
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def cbytes(b: bytes | None) -> bytes:  # compact (nullable) bytes / records
    if b is None:
        return b"\x00"
    return uvarint(len(b) + 1) + b


def carr(n: int | None) -> bytes:  # compact array length
    return b"\x00" if n is None else uvarint(n + 1)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


NO_TAGS = b"\x00"

# An opaque record-batch payload: the codec must carry it verbatim (RecordBatch parsing is protocol.records' job).
RECORDS = bytes(range(61)) + b"payload"


def test_registered_ranges() -> None:
    assert (Metadata.min_version, Metadata.max_version) == (0, 13)
    assert (ListOffsets.min_version, ListOffsets.max_version) == (0, 7)
    assert (Fetch.min_version, Fetch.max_version) == (4, 12)
    assert (Produce.min_version, Produce.max_version) == (3, 9)
    assert (InitProducerId.min_version, InitProducerId.max_version) == (0, 4)
    for api, flex in ((Metadata, 9), (ListOffsets, 6), (Fetch, 12), (Produce, 9), (InitProducerId, 2)):
        assert APIS[api.key] is api
        assert api.request.flexible.low == api.response.flexible.low == flex


# --- Fetch ------------------------------------------------------------------------------------------------------


def _fetch_v12_response(partition) -> bytes:
    R = Fetch.response.cls
    return Fetch.response.encode(R(throttle_time_ms=0, error_code=0, session_id=7, responses=[
        R.Topic(topic="t", partitions=[partition])]), 12)


def test_fetch_v12_response_records_exact_bytes() -> None:
    R = Fetch.response.cls
    part = R.Topic.Partition(partition_index=3, error_code=0, high_watermark=100, last_stable_offset=90,
                             log_start_offset=0, aborted_transactions=[R.Topic.Partition.AbortedTransaction(
                                 producer_id=42, first_offset=80)],
                             preferred_read_replica=-1, records=RECORDS)
    raw = _fetch_v12_response(part)
    expected = (
        i32(0) + i16(0) + i32(7)                        # throttle, error, session id
        + carr(1) + cstr("t")                           # responses[0].topic
        + carr(1) + i32(3) + i16(0) + i64(100) + i64(90) + i64(0)
        + carr(1) + i64(42) + i64(80) + NO_TAGS         # aborted_transactions[0]
        + i32(-1)                                       # preferred_read_replica
        + cbytes(RECORDS)                               # records: compact bytes, carried verbatim
        + NO_TAGS                                       # partition tags (all tagged structs at default)
        + NO_TAGS                                       # topic tags
        + NO_TAGS                                       # top-level tags
    )
    assert raw == expected
    back = Fetch.response.decode(raw, 12)
    p = back.responses[0].partitions[0]
    assert p.records == RECORDS
    assert p.aborted_transactions[0].producer_id == 42
    assert p.diverging_epoch == R.Topic.Partition.EpochEndOffset(epoch=-1, end_offset=-1)
    assert p.current_leader.leader_id == -1 and p.snapshot_id.end_offset == -1


def test_fetch_v12_response_null_records_and_null_aborted_transactions() -> None:
    R = Fetch.response.cls
    part = R.Topic.Partition(partition_index=0, error_code=1, high_watermark=-1, aborted_transactions=None,
                             records=None)
    raw = _fetch_v12_response(part)
    p = Fetch.response.decode(raw, 12).responses[0].partitions[0]
    assert p.records is None and p.aborted_transactions is None
    # null compact array and null compact bytes are both a single 0 varint
    assert raw.endswith(b"\x00" + i32(-1) + b"\x00" + NO_TAGS * 3)


def test_fetch_v12_response_tagged_structs() -> None:
    """diverging_epoch (tag 0), current_leader (tag 1) and snapshot_id (tag 2) are tagged structs: written only
    when they differ from the all-default struct, in tag order, each as a length-prefixed nested struct with its
    own (empty) tagged section."""
    R = Fetch.response.cls
    P = R.Topic.Partition
    part = P(partition_index=0, high_watermark=5, current_leader=P.LeaderIdAndEpoch(leader_id=2, leader_epoch=9),
             diverging_epoch=P.EpochEndOffset(epoch=4, end_offset=77), records=b"")
    raw = _fetch_v12_response(part)
    diverging = i32(4) + i64(77) + NO_TAGS
    leader = i32(2) + i32(9) + NO_TAGS
    tags = uvarint(2) + uvarint(0) + uvarint(len(diverging)) + diverging + uvarint(1) + uvarint(len(leader)) + leader
    assert raw.endswith(cbytes(b"") + tags + NO_TAGS + NO_TAGS)
    p = Fetch.response.decode(raw, 12).responses[0].partitions[0]
    assert p.current_leader == P.LeaderIdAndEpoch(leader_id=2, leader_epoch=9)
    assert p.diverging_epoch == P.EpochEndOffset(epoch=4, end_offset=77)
    assert p.snapshot_id == P.SnapshotId()  # absent -> default (-1, -1)


def test_fetch_v11_response_has_no_tagged_sections() -> None:
    R = Fetch.response.cls
    msg = R(throttle_time_ms=1, error_code=0, session_id=0, responses=[R.Topic(topic="t", partitions=[
        R.Topic.Partition(partition_index=0, high_watermark=1, last_stable_offset=1, log_start_offset=0,
                          aborted_transactions=None, preferred_read_replica=-1, records=RECORDS)])])
    raw = Fetch.response.encode(msg, 11)
    expected = (i32(1) + i16(0) + i32(0) + i32(1) + string("t") + i32(1) + i32(0) + i16(0) + i64(1) + i64(1)
                + i64(0) + i32(-1) + i32(-1) + i32(len(RECORDS)) + RECORDS)
    assert raw == expected


def test_fetch_v12_request_cluster_id_is_a_nullable_tagged_string() -> None:
    Q = Fetch.request.cls
    req = Q(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1, session_id=0,
            session_epoch=-1, topics=[Q.Topic(topic="t", partitions=[Q.Topic.Partition(
                partition=0, current_leader_epoch=5, fetch_offset=10, last_fetched_epoch=4, log_start_offset=-1,
                partition_max_bytes=1048576)])], forgotten_topics_data=[], rack_id="")
    body = (i32(-1) + i32(500) + i32(1) + i32(52428800) + i8(1) + i32(0) + i32(-1)
            + carr(1) + cstr("t") + carr(1) + i32(0) + i32(5) + i64(10) + i32(4) + i64(-1) + i32(1048576)
            + NO_TAGS + NO_TAGS + carr(0) + cstr(""))
    assert req.cluster_id is None
    assert Fetch.request.encode(req, 12) == body + NO_TAGS  # null cluster_id (the default) is not written

    req.cluster_id = "kgroup-cluster"
    raw = Fetch.request.encode(req, 12)
    tagged_value = cstr("kgroup-cluster")
    assert raw == body + uvarint(1) + uvarint(0) + uvarint(len(tagged_value)) + tagged_value
    back = Fetch.request.decode(raw, 12)
    assert back.cluster_id == "kgroup-cluster" and back == req


def test_fetch_request_version_gated_fields() -> None:
    Q = Fetch.request.cls
    req = Q(max_wait_ms=100, min_bytes=1, topics=[Q.Topic(topic="t", partitions=[
        Q.Topic.Partition(partition=1, current_leader_epoch=3, fetch_offset=7, last_fetched_epoch=2,
                          log_start_offset=5, partition_max_bytes=99)])],
            forgotten_topics_data=[Q.ForgottenTopic(topic="old", partitions=[1, 2])], rack_id="r1")
    # v4: no log_start_offset (5+), no sessions/forgotten (7+), no current_leader_epoch (9+), no rack (11+)
    v4 = Fetch.request.encode(req, 4)
    assert v4 == (i32(-1) + i32(100) + i32(1) + i32(0x7FFFFFFF) + i8(0) + i32(1) + string("t") + i32(1)
                  + i32(1) + i64(7) + i32(99))
    back = Fetch.request.decode(v4, 4)
    assert back.topics[0].partitions[0].current_leader_epoch == -1
    assert back.forgotten_topics_data == [] and back.rack_id == ""
    v11 = Fetch.request.decode(Fetch.request.encode(req, 11), 11)
    assert v11.rack_id == "r1" and v11.forgotten_topics_data[0].partitions == [1, 2]
    assert v11.topics[0].partitions[0].last_fetched_epoch == -1  # 12+


# --- Produce ----------------------------------------------------------------------------------------------------


def test_produce_v9_request_exact_bytes() -> None:
    Q = Produce.request.cls
    req = Q(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[Q.Topic(name="t", partition_data=[
        Q.Topic.Partition(index=0, records=RECORDS)])])
    raw = Produce.request.encode(req, 9)
    assert raw == (cstr(None) + i16(-1) + i32(30000) + carr(1) + cstr("t") + carr(1) + i32(0) + cbytes(RECORDS)
                   + NO_TAGS + NO_TAGS + NO_TAGS)
    assert Produce.request.decode(raw, 9) == req
    # v8 and below: classic nullable string / int32 arrays / int32-length bytes
    assert Produce.request.encode(req, 8) == (string(None) + i16(-1) + i32(30000) + i32(1) + string("t") + i32(1)
                                              + i32(0) + i32(len(RECORDS)) + RECORDS)


def test_produce_v9_unknown_tagged_fields_survive() -> None:
    """Produce v9 has no known tagged fields (KIP-951's leader hints are v10+), but every struct of a flexible
    version carries a tagged section; unknown tags must be kept and written back, as Kafka does."""
    Q = Produce.request.cls
    raw = (cstr("tx") + i16(1) + i32(1000) + carr(1) + cstr("t") + carr(1) + i32(2) + cbytes(None)
           + uvarint(1) + uvarint(5) + uvarint(2) + b"hi"          # partition: unknown tag 5
           + NO_TAGS
           + uvarint(1) + uvarint(0) + uvarint(1) + b"\x07")       # top level: unknown tag 0
    req = Produce.request.decode(raw, 9)
    assert req.transactional_id == "tx"
    part = req.topic_data[0].partition_data[0]
    assert part.records is None and part.unknown_tagged_fields == {5: b"hi"}
    assert req.unknown_tagged_fields == {0: b"\x07"}
    assert Produce.request.encode(req, 9) == raw
    assert isinstance(req, Q)


def test_produce_v9_response_record_errors() -> None:
    R = Produce.response.cls
    P = R.Topic.Partition
    resp = R(responses=[R.Topic(name="t", partition_responses=[P(
        index=0, error_code=87, base_offset=-1, log_append_time_ms=-1, log_start_offset=0,
        record_errors=[P.RecordError(batch_index=3, batch_index_error_message=None)],
        error_message="INVALID_RECORD")])], throttle_time_ms=0)
    raw = Produce.response.encode(resp, 9)
    assert raw == (carr(1) + cstr("t") + carr(1) + i32(0) + i16(87) + i64(-1) + i64(-1) + i64(0)
                   + carr(1) + i32(3) + cstr(None) + NO_TAGS + cstr("INVALID_RECORD") + NO_TAGS
                   + NO_TAGS + i32(0) + NO_TAGS)
    assert Produce.response.decode(raw, 9) == resp
    # v7: no record errors / error message (8+)
    v7 = Produce.response.decode(Produce.response.encode(resp, 7), 7)
    p7 = v7.responses[0].partition_responses[0]
    assert p7.record_errors == [] and p7.error_message is None and p7.log_start_offset == 0


# --- Metadata ---------------------------------------------------------------------------------------------------


def _metadata_response():
    R = Metadata.response.cls
    return R(throttle_time_ms=0, brokers=[R.Broker(node_id=1, host="localhost", port=9092, rack=None)],
             cluster_id="c", controller_id=1, topics=[R.Topic(
                 error_code=0, name="t", topic_id=uuid.UUID(int=1), is_internal=False, partitions=[
                     R.Topic.Partition(error_code=0, partition_index=0, leader_id=1, leader_epoch=0,
                                       replica_nodes=[1], isr_nodes=[1], offline_replicas=[])],
                 topic_authorized_operations=-2147483648)],
             error_code=0)


def test_metadata_v13_top_level_error_code_is_last() -> None:
    resp = _metadata_response()
    resp.error_code = 79  # any non-zero top-level error; it follows the topics array on the wire
    v13 = Metadata.response.encode(resp, 13)
    v12 = Metadata.response.encode(resp, 12)
    assert v13 == v12[:-1] + i16(79) + NO_TAGS
    assert Metadata.response.decode(v13, 13).error_code == 79
    assert Metadata.response.decode(v12, 12).error_code == 0  # not on the wire before v13


def test_metadata_v13_response_exact_bytes() -> None:
    raw = Metadata.response.encode(_metadata_response(), 13)
    assert raw == (
        i32(0)
        + carr(1) + i32(1) + cstr("localhost") + i32(9092) + cstr(None) + NO_TAGS
        + cstr("c") + i32(1)
        + carr(1) + i16(0) + cstr("t") + uuid.UUID(int=1).bytes + b"\x00"
        + carr(1) + i16(0) + i32(0) + i32(1) + i32(0) + carr(1) + i32(1) + carr(1) + i32(1) + carr(0) + NO_TAGS
        + i32(-2147483648) + NO_TAGS
        + i16(0) + NO_TAGS)  # no cluster_authorized_operations after v10


def test_metadata_request_null_topics_and_v0_empty_array() -> None:
    Q = Metadata.request.cls
    # v1+: null = all topics; v0 cannot say null (an empty array means all topics there)
    assert Metadata.request.encode(Q(topics=None), 1) == i32(-1)
    assert Metadata.request.decode(i32(-1), 1).topics is None
    assert Metadata.request.encode(Q(topics=[]), 0) == i32(0)
    with pytest.raises(ProtocolError):
        Metadata.request.decode(i32(-1), 0)
    # v13 as kafka-python 3.0 sends it: null topics, auto-create flag, topic authorized ops flag
    req = Metadata.request.decode(b"\x00" + b"\x01" + b"\x00" + NO_TAGS, 13)
    assert req.topics is None and req.allow_auto_topic_creation is True
    assert req.include_topic_authorized_operations is False
    # v10-11 carry topic ids and a nullable name
    raw = Metadata.request.encode(Q(topics=[Q.Topic(topic_id=uuid.UUID(int=5), name=None)]), 10)
    assert raw == carr(1) + uuid.UUID(int=5).bytes + cstr(None) + NO_TAGS + b"\x01" + b"\x00" + b"\x00" + NO_TAGS


def test_metadata_response_name_nullable_from_v12() -> None:
    resp = _metadata_response()
    resp.topics[0].name = None
    assert Metadata.response.decode(Metadata.response.encode(resp, 12), 12).topics[0].name is None
    with pytest.raises(ProtocolError):
        Metadata.response.encode(resp, 11)


# --- ListOffsets ------------------------------------------------------------------------------------------------


def test_list_offsets_v0_only_fields() -> None:
    Q = ListOffsets.request.cls
    req = Q(replica_id=-1, topics=[Q.Topic(name="t", partitions=[Q.Topic.Partition(partition_index=0,
                                                                                 timestamp=-1)])])
    assert req.topics[0].partitions[0].max_num_offsets == 1  # spec default
    assert ListOffsets.request.encode(req, 0) == (i32(-1) + i32(1) + string("t") + i32(1) + i32(0) + i64(-1)
                                                  + i32(1))
    assert ListOffsets.request.encode(req, 1) == i32(-1) + i32(1) + string("t") + i32(1) + i32(0) + i64(-1)

    R = ListOffsets.response.cls
    resp = R(topics=[R.Topic(name="t", partitions=[R.Topic.Partition(
        partition_index=0, error_code=0, old_style_offsets=[42], timestamp=-1, offset=42)])])
    v0 = ListOffsets.response.encode(resp, 0)
    assert v0 == i32(1) + string("t") + i32(1) + i32(0) + i16(0) + i32(1) + i64(42)
    back = ListOffsets.response.decode(v0, 0).topics[0].partitions[0]
    assert back.old_style_offsets == [42] and back.offset == -1
    v1 = ListOffsets.response.encode(resp, 1)
    assert v1 == i32(1) + string("t") + i32(1) + i32(0) + i16(0) + i64(-1) + i64(42)


def test_list_offsets_v7_flexible() -> None:
    Q = ListOffsets.request.cls
    req = Q(replica_id=-1, isolation_level=1, topics=[Q.Topic(name="t", partitions=[
        Q.Topic.Partition(partition_index=2, current_leader_epoch=4, timestamp=-3)])])
    raw = ListOffsets.request.encode(req, 7)
    assert raw == (i32(-1) + i8(1) + carr(1) + cstr("t") + carr(1) + i32(2) + i32(4) + i64(-3) + NO_TAGS
                   + NO_TAGS + NO_TAGS)
    assert ListOffsets.request.decode(raw, 7) == req


# --- InitProducerId ---------------------------------------------------------------------------------------------


def test_init_producer_id_v4_idempotent_producer() -> None:
    """kafka-python's idempotent producer: v4, null transactional id, producer id/epoch -1."""
    Q = InitProducerId.request.cls
    raw = cstr(None) + i32(60000) + i64(-1) + i16(-1) + NO_TAGS
    req = InitProducerId.request.decode(raw, 4)
    assert req.transactional_id is None and req.producer_id == -1 and req.producer_epoch == -1
    assert InitProducerId.request.encode(req, 4) == raw
    assert InitProducerId.request.encode(Q(transactional_id=None, transaction_timeout_ms=60000), 1) == (
        string(None) + i32(60000))

    R = InitProducerId.response.cls
    resp = R(throttle_time_ms=0, error_code=0, producer_id=1000, producer_epoch=0)
    assert InitProducerId.response.encode(resp, 4) == i32(0) + i16(0) + i64(1000) + i16(0) + NO_TAGS
    assert InitProducerId.response.encode(resp, 0) == i32(0) + i16(0) + i64(1000) + i16(0)
    assert R().producer_id == -1


def test_fetch_v12_default_tagged_struct_with_unknown_tags_is_written() -> None:
    """Kafka writes a tagged struct unless it equals a fresh instance, and its equals() compares unknown tagged
    fields; so a default-valued current_leader that carries unknown tags must still go on the wire."""
    R = Fetch.response.cls
    P = R.Topic.Partition
    leader = P.LeaderIdAndEpoch(unknown_tagged_fields={9: b"x"})
    raw = _fetch_v12_response(P(current_leader=leader, records=b""))
    inner = i32(-1) + i32(-1) + uvarint(1) + uvarint(9) + uvarint(1) + b"x"
    assert raw.endswith(cbytes(b"") + uvarint(1) + uvarint(1) + uvarint(len(inner)) + inner + NO_TAGS + NO_TAGS)
    back = Fetch.response.decode(raw, 12).responses[0].partitions[0]
    assert back.current_leader.unknown_tagged_fields == {9: b"x"}

"""Consumer protocol embedded bytes: round trips per version, forward compatibility, kafka-python oracles."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KPAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KPSubscription
from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0, ConsumerProtocolMemberMetadata_v0

from protocol.consumer_protocol import (
    HIGHEST_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.exceptions import ProtocolError

names = st.text(max_size=12)
partitions = st.lists(st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1), max_size=5)
topic_partitions = st.lists(st.tuples(names, partitions), max_size=4)
user_data = st.none() | st.binary(max_size=30)
subscriptions = st.builds(
    ConsumerProtocolSubscription,
    topics=st.lists(names, max_size=5),
    user_data=user_data,
    owned_partitions=topic_partitions,
    generation_id=st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1),
    rack_id=st.none() | names,
)
assignments = st.builds(ConsumerProtocolAssignment, assigned_partitions=topic_partitions, user_data=user_data)


def _expected_at(sub: ConsumerProtocolSubscription, version: int) -> ConsumerProtocolSubscription:
    """What survives an encode at ``version``: fields the version lacks come back as their defaults."""
    return ConsumerProtocolSubscription(
        topics=sub.topics,
        user_data=sub.user_data,
        owned_partitions=sub.owned_partitions if version >= 1 else [],
        generation_id=sub.generation_id if version >= 2 else -1,
        rack_id=sub.rack_id if version >= 3 else None,
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=60)
@given(sub=subscriptions)
def test_subscription_round_trip(version, sub):
    raw = encode_subscription(sub, version)
    assert struct.unpack_from(">h", raw)[0] == version
    assert decode_subscription(raw) == (version, _expected_at(sub, version))


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=60)
@given(a=assignments)
def test_assignment_round_trip(version, a):
    raw = encode_assignment(a, version)
    assert decode_assignment(raw) == (version, a)


def test_subscription_v3_bytes_by_hand():
    sub = ConsumerProtocolSubscription(topics=["a", "b"], user_data=b"xy", owned_partitions=[("a", [1, 2])],
                                       generation_id=5, rack_id="r1")
    expected = (b"\x00\x03" + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x01b" + b"\x00\x00\x00\x02xy"
                + b"\x00\x00\x00\x01" + b"\x00\x01a" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01\x00\x00\x00\x02"
                + b"\x00\x00\x00\x05" + b"\x00\x02r1")
    assert encode_subscription(sub) == expected
    v0 = encode_subscription(ConsumerProtocolSubscription(topics=["t"]), 0)
    assert v0 == b"\x00\x00" + b"\x00\x00\x00\x01\x00\x01t" + b"\xff\xff\xff\xff"


def test_newer_version_is_parsed_with_known_fields():
    # A hypothetical v7 member appended fields after rack_id: Kafka clamps to v3 and ignores the tail.
    sub = ConsumerProtocolSubscription(topics=["t"], owned_partitions=[("t", [0])], generation_id=9, rack_id="r")
    raw = bytearray(encode_subscription(sub, 3))
    struct.pack_into(">h", raw, 0, 7)
    raw += b"\x00\x00\x00\x2a future fields"
    assert decode_subscription(bytes(raw)) == (7, sub)
    a = ConsumerProtocolAssignment([("t", [0, 1])], b"u")
    raw_a = bytearray(encode_assignment(a, 3))
    struct.pack_into(">h", raw_a, 0, 100)
    raw_a += b"\x01\x02"
    assert decode_assignment(bytes(raw_a)) == (100, a)


def test_encode_above_highest_is_clamped_and_negative_rejected():
    sub = ConsumerProtocolSubscription(topics=["t"], rack_id="r")
    assert encode_subscription(sub, 9) == encode_subscription(sub, HIGHEST_VERSION)
    with pytest.raises(ProtocolError):
        encode_subscription(sub, -1)
    raw = bytearray(encode_subscription(sub, 0))
    struct.pack_into(">h", raw, 0, -1)
    with pytest.raises(ProtocolError, match="version"):
        decode_subscription(bytes(raw))
    with pytest.raises(ProtocolError, match="version"):
        decode_assignment(b"\xff\xfe" + encode_assignment(ConsumerProtocolAssignment([]))[2:])


def test_null_arrays_are_rejected():
    with pytest.raises(ProtocolError, match="null"):
        decode_subscription(b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")
    with pytest.raises(ProtocolError, match="null"):
        decode_assignment(b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")


def test_empty_bytes_are_an_error():
    # Kafka: "Buffer underflow while parsing consumer protocol's header"
    with pytest.raises(ProtocolError):
        decode_assignment(b"")
    with pytest.raises(ProtocolError):
        decode_subscription(b"\x00")


# --- kafka-python oracles ----------------------------------------------------------------------------------------

def _to_kp_subscription(sub, version):
    return KPSubscription(
        topics=sub.topics, user_data=sub.user_data,
        owned_partitions=[KPSubscription.TopicPartition(topic=t, partitions=p) for t, p in sub.owned_partitions],
        generation_id=sub.generation_id, rack_id=sub.rack_id, version=version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=40)
@given(sub=subscriptions)
def test_subscription_against_kafka_python(version, sub):
    ours = encode_subscription(sub, version)
    theirs = bytes(_to_kp_subscription(sub, version).encode())
    assert ours == theirs
    decoded = KPSubscription.decode(ours)
    assert decoded.version == version
    assert list(decoded.topics) == sub.topics and decoded.user_data == sub.user_data
    if version >= 1:
        assert [(tp.topic, list(tp.partitions)) for tp in decoded.owned_partitions] == sub.owned_partitions
    if version >= 2:
        assert decoded.generation_id == sub.generation_id
    if version >= 3:
        assert decoded.rack_id == sub.rack_id
    assert decode_subscription(theirs) == (version, _expected_at(sub, version))


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=40)
@given(a=assignments)
def test_assignment_against_kafka_python(version, a):
    ours = encode_assignment(a, version)
    kp = KPAssignment(assigned_partitions=[KPAssignment.TopicPartition(topic=t, partitions=p)
                                           for t, p in a.assigned_partitions],
                      user_data=a.user_data, version=version)
    theirs = bytes(kp.encode())
    assert ours == theirs
    decoded = KPAssignment.decode(ours)
    assert [(tp.topic, list(tp.partitions)) for tp in decoded.assigned_partitions] == a.assigned_partitions
    assert decoded.user_data == a.user_data
    assert decode_assignment(theirs) == (version, a)


@settings(max_examples=40)
@given(topics=st.lists(names, max_size=5), data=st.binary(max_size=20))
def test_v0_against_kafka_python_legacy_structs(topics, data):
    md = ConsumerProtocolMemberMetadata_v0(version=0, topics=topics, user_data=data)
    assert decode_subscription(md.encode()) == (0, ConsumerProtocolSubscription(topics=topics, user_data=data))
    decoded = ConsumerProtocolMemberMetadata_v0.decode(encode_subscription(
        ConsumerProtocolSubscription(topics=topics, user_data=data), 0))
    assert (decoded.version, list(decoded.topics), decoded.user_data) == (0, topics, data)


@settings(max_examples=40)
@given(tps=topic_partitions, data=st.binary(max_size=20))
def test_v0_assignment_against_kafka_python_legacy_structs(tps, data):
    asg = ConsumerProtocolMemberAssignment_v0(version=0, assigned_partitions=tps, user_data=data)
    assert decode_assignment(asg.encode()) == (0, ConsumerProtocolAssignment(tps, data))
    decoded = ConsumerProtocolMemberAssignment_v0.decode(encode_assignment(ConsumerProtocolAssignment(tps, data), 0))
    assert [(t, list(p)) for t, p in decoded.assigned_partitions] == tps and decoded.user_data == data


# --- robustness --------------------------------------------------------------------------------------------------

@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_arbitrary_bytes_raise_only_protocol_error(data):
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except ProtocolError:
            pass


@settings(max_examples=100)
@given(subscriptions, st.integers(min_value=0, max_value=3), st.data())
def test_truncated_subscriptions_raise_protocol_error(sub, version, data):
    raw = encode_subscription(sub, version)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    with pytest.raises(ProtocolError):
        decode_subscription(raw[:cut])


@settings(max_examples=100)
@given(assignments, st.data())
def test_truncated_assignments_raise_protocol_error(a, data):
    raw = encode_assignment(a)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    with pytest.raises(ProtocolError):
        decode_assignment(raw[:cut])

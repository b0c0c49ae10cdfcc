"""The consumer protocol's embedded bytes (sans-IO): what a ``consumer``-type group carries inside JoinGroup
``protocols[].metadata`` / ``members[].metadata`` and SyncGroup ``assignments[].assignment`` / ``assignment``.

Mirrors Kafka's ``ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json`` (both
``validVersions`` 0-3, ``flexibleVersions`` "none") and ``org.apache.kafka.clients.consumer.internals.
ConsumerProtocol``.  The bytes are an INT16 version followed by the message in classic (non-flexible) encoding::

    Subscription v0: topics [STRING], user_data NULLABLE_BYTES
                 v1: + owned_partitions [topic STRING, partitions [INT32]]        (KIP-429, cooperative)
                 v2: + generation_id INT32 (default -1)                           (KIP-792)
                 v3: + rack_id NULLABLE_STRING (default null)                     (KIP-881, rack-aware)
    Assignment v0-v3: assigned_partitions [topic STRING, partitions [INT32]], user_data NULLABLE_BYTES
                      (v1-v3 are byte-identical to v0; the version moves in step with Subscription)

Forward compatibility, as in Kafka: ``ConsumerProtocol.deserializeSubscription`` clamps a version above the
highest it knows down to that highest version (``checkSubscriptionVersion``) and parses just the fields it knows;
because the encoding is not flexible and new versions may only *append* fields, the bytes a newer member added
at the end are simply left unread (Kafka's ``ByteBufferAccessor`` does not require the buffer to be consumed).
So a v7 subscription decodes as v3 and its extra trailing bytes are ignored.  A negative version is an error
("Unsupported subscription version"), as in Kafka.  Within the known fields everything is strict: a truncated
field, a null non-nullable array or string, or invalid UTF-8 raises :class:`~protocol.exceptions.ProtocolError`.

Encoding at a version above 3 writes v3 (Kafka clamps the same way); encoding at a version lower than 3 drops the fields that version lacks (as Kafka's generated ``write`` does for
ignorable fields).  Unlike Kafka's client, which sorts topics and owned partitions before serializing, the codec
keeps the order it is given (it is a codec, not an assignor); the decoded ``version`` is the one on the wire.
A ``rack_id`` of ``""`` is kept as ``""`` (Kafka's client turns it into "no rack" after decoding).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.exceptions import ProtocolError
from protocol.types import (
    INT16,
    INT32,
    read_array_length,
    read_int16,
    read_int32,
    read_nullable_bytes,
    read_nullable_string,
    read_string,
    write_bytes,
    write_string,
)

PROTOCOL_TYPE = "consumer"
LOWEST_VERSION = 0
HIGHEST_VERSION = 3

TopicPartitions = list[tuple[str, list[int]]]


@dataclass
class ConsumerProtocolSubscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None


@dataclass
class ConsumerProtocolAssignment:
    assigned_partitions: TopicPartitions
    user_data: bytes | None = None


def _check_version(version: int, what: str) -> int:
    """``ConsumerProtocol.checkSubscriptionVersion`` / ``checkAssignmentVersion``: below the lowest version is an
    error, above the highest is clamped to the highest."""
    if version < LOWEST_VERSION:
        raise ProtocolError(f"unsupported {what} version: {version}")
    return min(version, HIGHEST_VERSION)


def _read_version(data, what: str) -> tuple[int, int, int]:
    """Returns (version on the wire, version to parse with, position)."""
    version, pos = read_int16(data, 0)
    return version, _check_version(version, what), pos


def _write_topic_partitions(out: bytearray, tps: TopicPartitions) -> None:
    out += INT32.pack(len(tps))
    for topic, partitions in tps:
        write_string(out, topic)
        out += INT32.pack(len(partitions))
        for p in partitions:
            try:
                out += INT32.pack(p)
            except Exception as exc:  # struct.error or a non-int
                raise ProtocolError(f"partition id out of int32 range: {p!r}") from exc


def _read_topic_partitions(data, pos: int, what: str) -> tuple[TopicPartitions, int]:
    n, pos = read_array_length(data, pos, 2 + 4)  # a topic-partition entry is at least 6 bytes
    if n < 0:
        raise ProtocolError(f"non-nullable field {what} was serialized as null")
    result: TopicPartitions = []
    for _ in range(n):
        topic, pos = read_string(data, pos)
        m, pos = read_array_length(data, pos, 4)
        if m < 0:
            raise ProtocolError(f"non-nullable field partitions of {what} was serialized as null")
        end = pos + 4 * m
        partitions = [v for (v,) in INT32.iter_unpack(data[pos:end])] if m else []
        pos = end
        result.append((topic, partitions))
    return result, pos


def encode_subscription(sub: ConsumerProtocolSubscription, version: int = HIGHEST_VERSION) -> bytes:
    """Version-prefixed bytes of ``sub`` (``ConsumerProtocol.serializeSubscription``)."""
    version = _check_version(version, "subscription")
    out = bytearray(INT16.pack(version))
    out += INT32.pack(len(sub.topics))
    for topic in sub.topics:
        write_string(out, topic)
    write_bytes(out, sub.user_data)
    if version >= 1:
        _write_topic_partitions(out, sub.owned_partitions)
    if version >= 2:
        try:
            out += INT32.pack(sub.generation_id)
        except Exception as exc:
            raise ProtocolError(f"generation id out of int32 range: {sub.generation_id!r}") from exc
    if version >= 3:
        write_string(out, sub.rack_id)  # NULLABLE_STRING: None -> length -1
    return bytes(out)


def decode_subscription(data) -> tuple[int, ConsumerProtocolSubscription]:
    """(wire version, subscription) from version-prefixed bytes (``ConsumerProtocol.deserializeSubscription``)."""
    data = bytes(data)
    wire_version, version, pos = _read_version(data, "subscription")
    n, pos = read_array_length(data, pos, 2)
    if n < 0:
        raise ProtocolError("non-nullable field topics was serialized as null")
    topics = []
    for _ in range(n):
        topic, pos = read_string(data, pos)
        topics.append(topic)
    user_data, pos = read_nullable_bytes(data, pos)
    sub = ConsumerProtocolSubscription(topics=topics, user_data=user_data)
    if version >= 1:
        sub.owned_partitions, pos = _read_topic_partitions(data, pos, "ownedPartitions")
    if version >= 2:
        sub.generation_id, pos = read_int32(data, pos)
    if version >= 3:
        sub.rack_id, pos = read_nullable_string(data, pos)
    return wire_version, sub


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int = HIGHEST_VERSION) -> bytes:
    """Version-prefixed bytes of ``assignment`` (``ConsumerProtocol.serializeAssignment``)."""
    version = _check_version(version, "assignment")
    out = bytearray(INT16.pack(version))
    _write_topic_partitions(out, assignment.assigned_partitions)
    write_bytes(out, assignment.user_data)
    return bytes(out)


def decode_assignment(data) -> tuple[int, ConsumerProtocolAssignment]:
    """(wire version, assignment) from version-prefixed bytes (``ConsumerProtocol.deserializeAssignment``)."""
    data = bytes(data)
    wire_version, _version, pos = _read_version(data, "assignment")
    assigned, pos = _read_topic_partitions(data, pos, "assignedPartitions")
    user_data, pos = read_nullable_bytes(data, pos)
    return wire_version, ConsumerProtocolAssignment(assigned_partitions=assigned, user_data=user_data)

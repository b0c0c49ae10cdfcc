"""Wire formats of the sticky assignors' user data (big-endian, Kafka ``protocol.types`` encoding).

``StickyAssignor`` (KIP-54, KIP-341)::

    StickyAssignorUserData v0 => [previous_assignment]
    StickyAssignorUserData v1 => [previous_assignment] generation
      previous_assignment => topic [partitions]
        topic      => STRING  (int16 length + UTF-8)
        partitions => INT32
      generation => INT32

Arrays are an int32 count followed by the elements. Kafka writes v1 and reads v1, falling back to v0; bytes
that parse as neither are ignored ("previous assignment cannot be parsed": no partitions, generation -1).
Topics are written in the iteration order of the ``HashMap`` ``serializeTopicPartitionAssignment`` groups the
partitions in: one ``computeIfAbsent(topic)`` per partition, in the member's partition order -- a new topic goes to
the *head* of its bucket and a resize waits for the next call.

``CooperativeStickyAssignor`` (KIP-429) writes only ``generation => INT32``; unreadable bytes mean
generation -1.
"""

from __future__ import annotations

import struct
from typing import Iterable, Optional

from protocol.java import compute_if_absent_order
from ._types import TopicPartition

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class UserDataError(ValueError):
    """The bytes are not a valid StickyAssignorUserData (Kafka's SchemaException / BufferUnderflowException)."""


def group_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """``(topic, [partitions])`` in the iteration order of Kafka's grouping map (see the module docstring)."""
    by_topic: dict[str, list[int]] = {}
    calls = last_insertion = 0
    for topic, p in partitions:
        calls += 1
        lst = by_topic.get(topic)
        if lst is None:
            by_topic[topic] = [p]
            last_insertion = calls
        else:
            lst.append(p)
    return [(t, by_topic[t]) for t in compute_if_absent_order(list(by_topic), calls > last_insertion)]


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int = -1) -> bytes:
    """StickyAssignorUserData v1 for ``partitions`` (any order) and ``generation``."""
    out = [_I32.pack(0)]
    n = 0
    for topic, parts in group_by_topic(partitions):
        raw = topic.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise ValueError(f"topic name too long for a Kafka STRING: {len(raw)} bytes")
        out.append(_I16.pack(len(raw)))
        out.append(raw)
        out.append(struct.pack(f">i{len(parts)}i", len(parts), *parts))
        n += 1
    out[0] = _I32.pack(n)
    out.append(_I32.pack(generation))
    return b"".join(out)


def _read_assignment(data: bytes) -> tuple[list[tuple[str, list[int]]], int]:
    """Read ``[previous_assignment]``; return it and the offset after it. Raises UserDataError."""
    size = len(data)
    if size < 4:
        raise UserDataError("buffer underflow reading array size")
    (count,) = _I32.unpack_from(data, 0)
    off = 4
    if count < 0:
        raise UserDataError(f"Array size {count} cannot be negative")
    if count > size - off:
        raise UserDataError(f"Error reading array of size {count}, only {size - off} bytes available")
    topics: list[tuple[str, list[int]]] = []
    for _ in range(count):
        if off + 2 > size:
            raise UserDataError("buffer underflow reading string length")
        (slen,) = _I16.unpack_from(data, off)
        off += 2
        if slen < 0:
            raise UserDataError(f"String length {slen} cannot be negative")
        if slen > size - off:
            raise UserDataError(f"Error reading string of length {slen}, only {size - off} bytes available")
        topic = data[off:off + slen].decode("utf-8", errors="replace")
        off += slen
        if off + 4 > size:
            raise UserDataError("buffer underflow reading array size")
        (np,) = _I32.unpack_from(data, off)
        off += 4
        if np < 0:
            raise UserDataError(f"Array size {np} cannot be negative")
        if np > size - off:
            raise UserDataError(f"Error reading array of size {np}, only {size - off} bytes available")
        if off + 4 * np > size:
            raise UserDataError("buffer underflow reading partitions")
        parts = list(struct.unpack_from(f">{np}i", data, off))
        off += 4 * np
        topics.append((topic, parts))
    return topics, off


def decode_sticky_user_data(data: Optional[bytes]) -> tuple[list[tuple[str, list[int]]], Optional[int]]:
    """``StickyAssignor.memberData``: (previous assignment grouped by topic, generation or None).

    None/empty -> ([], None); v1 -> (assignment, generation); v0 -> (assignment, None); garbage -> ([], -1).
    Trailing bytes are ignored, as Kafka's ``Schema.read`` does.
    """
    if not data:
        return [], None
    try:
        topics, off = _read_assignment(data)
        if off + 4 > len(data):
            raise UserDataError("buffer underflow reading generation")
        return topics, _I32.unpack_from(data, off)[0]
    except UserDataError:
        pass
    try:
        topics, _ = _read_assignment(data)
        return topics, None
    except UserDataError:
        return [], -1


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor user data v0: the generation as INT32."""
    return _I32.pack(generation)


def decode_cooperative_user_data(data: Optional[bytes]) -> Optional[int]:
    """None -> None (absent); fewer than 4 bytes -> -1 (Kafka catches the read failure); else the INT32."""
    if data is None:
        return None
    if len(data) < 4:
        return -1
    return _I32.unpack_from(data, 0)[0]

"""Kafka wire primitives (sans-IO).

The encodings of Kafka's protocol guide (https://kafka.apache.org/protocol#protocol_types) and of
``org.apache.kafka.common.protocol.types.Type`` / ``ByteUtils``:

* fixed-width big-endian integers: INT8, INT16, INT32, INT64, UINT16, FLOAT64; BOOLEAN is one byte (0/1;
  any non-zero byte decodes as true, as Java does);
* UNSIGNED_VARINT: 7 bits per byte, little-endian groups, high bit = "more"; at most 5 bytes for 32 bits;
* VARINT / VARLONG: zig-zag then unsigned varint (at most 5 / 10 bytes) -- used inside record batches;
* UUID: 16 raw bytes; the all-zero UUID is Kafka's "ZERO_UUID" (null topic id);
* STRING: INT16 length + UTF-8; NULLABLE_STRING uses length -1 for null;
  COMPACT_STRING: UNSIGNED_VARINT (length + 1) + UTF-8, 0 for null (KIP-482 flexible versions);
* BYTES: INT32 length (-1 null); COMPACT_BYTES: UNSIGNED_VARINT length + 1;
* ARRAY: INT32 count (-1 null); COMPACT_ARRAY: UNSIGNED_VARINT count + 1;
* TAGGED_FIELDS: UNSIGNED_VARINT count, then for each field UNSIGNED_VARINT tag, UNSIGNED_VARINT size, bytes.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; every length is checked against the end of the
buffer *before* anything is sliced or allocated, and every failure is a :class:`ProtocolError`. Writers append
to a ``bytearray``.
"""

from __future__ import annotations

import struct
import uuid as _uuid

from protocol.exceptions import ProtocolError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

ZERO_UUID = _uuid.UUID(int=0)


def _need(buf, pos: int, n: int, what: str) -> None:
    if n < 0 or pos + n > len(buf):
        raise ProtocolError(f"truncated {what}: need {n} bytes at offset {pos}, have {len(buf) - pos}")


# --- unsigned varint / zig-zag varint and varlong ---------------------------------------------------------------

def write_unsigned_varint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ProtocolError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_unsigned_varint(buf, pos: int) -> tuple[int, int]:
    """Decode an UNSIGNED_VARINT of at most 5 bytes (Kafka's ByteUtils.readUnsignedVarint)."""
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtocolError("truncated unsigned varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > 0xFFFFFFFF:
                raise ProtocolError("unsigned varint exceeds 32 bits")
            return value, pos
        shift += 7
        if shift >= 35:
            raise ProtocolError("unsigned varint is longer than 5 bytes")


def _write_unsigned_varlong(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_unsigned_varlong(buf, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise ProtocolError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ProtocolError(f"varint is longer than {max_bytes} bytes")


def write_varint(out: bytearray, value: int) -> None:
    """Zig-zag encoded signed 32-bit varint (ByteUtils.writeVarint)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ProtocolError(f"varint out of int32 range: {value}")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def read_varint(buf, pos: int) -> tuple[int, int]:
    raw, pos = _read_unsigned_varlong(buf, pos, 5)
    if raw > 0xFFFFFFFF:
        raise ProtocolError("varint exceeds 32 bits")
    return (raw >> 1) ^ -(raw & 1), pos


def write_varlong(out: bytearray, value: int) -> None:
    """Zig-zag encoded signed 64-bit varint (ByteUtils.writeVarlong)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ProtocolError(f"varlong out of int64 range: {value}")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def read_varlong(buf, pos: int) -> tuple[int, int]:
    raw, pos = _read_unsigned_varlong(buf, pos, 10)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise ProtocolError("varlong exceeds 64 bits")
    return (raw >> 1) ^ -(raw & 1), pos


def unsigned_varint_size(value: int) -> int:
    n = 1
    while value >= 0x80:
        value >>= 7
        n += 1
    return n


def varint_size(value: int) -> int:
    return unsigned_varint_size(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# --- fixed width -------------------------------------------------------------------------------------------------

def _fixed(st: struct.Struct, what: str):
    size = st.size
    unpack_from = st.unpack_from
    pack = st.pack

    def read(buf, pos: int) -> tuple[int, int]:
        if pos + size > len(buf):
            raise ProtocolError(f"truncated {what} at offset {pos}")
        return unpack_from(buf, pos)[0], pos + size

    def write(out: bytearray, value) -> None:
        try:
            out += pack(value)
        except struct.error as exc:
            raise ProtocolError(f"{what} out of range: {value!r}") from exc

    return read, write


read_int8, write_int8 = _fixed(INT8, "int8")
read_int16, write_int16 = _fixed(INT16, "int16")
read_int32, write_int32 = _fixed(INT32, "int32")
read_int64, write_int64 = _fixed(INT64, "int64")
read_uint16, write_uint16 = _fixed(UINT16, "uint16")
read_uint32, write_uint32 = _fixed(UINT32, "uint32")
read_float64, write_float64 = _fixed(FLOAT64, "float64")


def read_bool(buf, pos: int) -> tuple[bool, int]:
    if pos >= len(buf):
        raise ProtocolError(f"truncated boolean at offset {pos}")
    return buf[pos] != 0, pos + 1


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def read_uuid(buf, pos: int) -> tuple[_uuid.UUID, int]:
    _need(buf, pos, 16, "uuid")
    return _uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


def write_uuid(out: bytearray, value: _uuid.UUID | None) -> None:
    out += (value or ZERO_UUID).bytes


# --- strings and bytes -------------------------------------------------------------------------------------------

def _decode_utf8(raw, pos: int) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"invalid UTF-8 in string at offset {pos}") from exc


def _encode_utf8(value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates cannot be sent as UTF-8 (Java replaces them; we refuse)
        raise ProtocolError(f"string is not encodable as UTF-8: {value!r}") from exc


def read_string(buf, pos: int) -> tuple[str, int]:
    value, pos = read_nullable_string(buf, pos)
    if value is None:
        raise ProtocolError("null value for a non-nullable string")
    return value, pos


def read_nullable_string(buf, pos: int) -> tuple[str | None, int]:
    n, pos = read_int16(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise ProtocolError(f"negative string length {n}")
    _need(buf, pos, n, "string")
    return _decode_utf8(buf[pos:pos + n], pos), pos + n


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = _encode_utf8(value)
    if len(raw) > 0x7FFF:
        raise ProtocolError(f"string of {len(raw)} bytes is longer than 32767")
    out += INT16.pack(len(raw))
    out += raw


def read_compact_nullable_string(buf, pos: int) -> tuple[str | None, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    n -= 1
    _need(buf, pos, n, "compact string")
    return _decode_utf8(buf[pos:pos + n], pos), pos + n


def read_compact_string(buf, pos: int) -> tuple[str, int]:
    value, pos = read_compact_nullable_string(buf, pos)
    if value is None:
        raise ProtocolError("null value for a non-nullable compact string")
    return value, pos


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    raw = _encode_utf8(value)
    if len(raw) > 0x7FFF:
        raise ProtocolError(f"string of {len(raw)} bytes is longer than 32767")
    write_unsigned_varint(out, len(raw) + 1)
    out += raw


def read_nullable_bytes(buf, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_int32(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise ProtocolError(f"negative bytes length {n}")
    _need(buf, pos, n, "bytes")
    return bytes(buf[pos:pos + n]), pos + n


def read_bytes(buf, pos: int) -> tuple[bytes, int]:
    value, pos = read_nullable_bytes(buf, pos)
    if value is None:
        raise ProtocolError("null value for non-nullable bytes")
    return value, pos


def write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def read_compact_nullable_bytes(buf, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    n -= 1
    _need(buf, pos, n, "compact bytes")
    return bytes(buf[pos:pos + n]), pos + n


def read_compact_bytes(buf, pos: int) -> tuple[bytes, int]:
    value, pos = read_compact_nullable_bytes(buf, pos)
    if value is None:
        raise ProtocolError("null value for non-nullable compact bytes")
    return value, pos


def write_compact_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0)
        return
    write_unsigned_varint(out, len(value) + 1)
    out += value


# --- array lengths and tagged fields -----------------------------------------------------------------------------

def read_array_length(buf, pos: int, min_element_size: int = 1) -> tuple[int, int]:
    """INT32 count, -1 for null. A count that cannot fit in the rest of the buffer is rejected up front, so a
    hostile count never makes us allocate (every element is at least ``min_element_size`` bytes)."""
    n, pos = read_int32(buf, pos)
    if n < -1:
        raise ProtocolError(f"negative array length {n}")
    if n > 0 and n * min_element_size > len(buf) - pos:
        raise ProtocolError(f"array of {n} elements cannot fit in the {len(buf) - pos} remaining bytes")
    return n, pos


def read_compact_array_length(buf, pos: int, min_element_size: int = 1) -> tuple[int, int]:
    """UNSIGNED_VARINT count + 1, 0 for null; returns -1 for null like :func:`read_array_length`."""
    n, pos = read_unsigned_varint(buf, pos)
    n -= 1
    if n > 0 and n * min_element_size > len(buf) - pos:
        raise ProtocolError(f"compact array of {n} elements cannot fit in the {len(buf) - pos} remaining bytes")
    return n, pos


def read_tagged_fields(buf, pos: int) -> tuple[dict[int, bytes], int]:
    """Raw tagged fields: {tag: bytes}. Tags must be strictly increasing (Kafka rejects otherwise)."""
    count, pos = read_unsigned_varint(buf, pos)
    if count > len(buf) - pos:
        raise ProtocolError(f"{count} tagged fields cannot fit in the {len(buf) - pos} remaining bytes")
    fields: dict[int, bytes] = {}
    prev = -1
    for _ in range(count):
        tag, pos = read_unsigned_varint(buf, pos)
        if tag <= prev:
            raise ProtocolError(f"tagged field {tag} out of order after {prev}")
        prev = tag
        size, pos = read_unsigned_varint(buf, pos)
        _need(buf, pos, size, f"tagged field {tag}")
        fields[tag] = bytes(buf[pos:pos + size])
        pos += size
    return fields, pos


def write_tagged_fields(out: bytearray, fields: dict[int, bytes] | None) -> None:
    if not fields:
        out.append(0)
        return
    write_unsigned_varint(out, len(fields))
    for tag in sorted(fields):
        raw = fields[tag]
        write_unsigned_varint(out, tag)
        write_unsigned_varint(out, len(raw))
        out += raw

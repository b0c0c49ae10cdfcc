"""Wire primitives (protocol/types.py) against hand-computed bytes.

Every expected byte string here was worked out by hand from Kafka's protocol guide
(https://kafka.apache.org/protocol#protocol_types) and ByteUtils, never by running the code under test:

* UNSIGNED_VARINT: 7-bit groups, least significant first, high bit = "more bytes follow".
  300 = 0b10_0101100 -> 0xac (0101100 | 0x80), 0x02.
* VARINT / VARLONG: zig-zag first ((n << 1) ^ (n >> 31|63)): 0->0, -1->1, 1->2, -2->3, ..., so
  INT32_MIN -> 0xffffffff -> ff ff ff ff 0f and INT32_MAX -> 0xfffffffe -> fe ff ff ff 0f.
* STRING: INT16 length; NULLABLE_STRING: -1 (ff ff) for null; COMPACT_STRING: UNSIGNED_VARINT length+1, 0 null.
* BYTES: INT32 length, -1 null; COMPACT_BYTES: UNSIGNED_VARINT length+1.
* TAGGED_FIELDS: UNSIGNED_VARINT count, then (tag, size, bytes) in strictly increasing tag order.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings, strategies as st

from protocol import types as T
from protocol.exceptions import ProtocolError


def w(writer, value) -> bytes:
    out = bytearray()
    writer(out, value)
    return bytes(out)


def h(s: str) -> bytes:
    return bytes.fromhex(s)


# --- unsigned varint ---------------------------------------------------------------------------------------------

UNSIGNED_VARINTS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "8001"),
    (300, "ac02"),
    (16383, "ff7f"),
    (16384, "808001"),
    (2097151, "ffff7f"),
    (2097152, "80808001"),
    (0x7FFFFFFF, "ffffffff07"),
    (0xFFFFFFFF, "ffffffff0f"),
]


@pytest.mark.parametrize("value,hexbytes", UNSIGNED_VARINTS)
def test_unsigned_varint_known_bytes(value, hexbytes):
    assert w(T.write_unsigned_varint, value) == h(hexbytes)
    # decoding at an offset and with trailing bytes: returns the position just after the varint
    buf = b"\xee" + h(hexbytes) + b"\xdd"
    assert T.read_unsigned_varint(buf, 1) == (value, 1 + len(h(hexbytes)))
    assert T.unsigned_varint_size(value) == len(h(hexbytes))


@pytest.mark.parametrize("bad", [b"", b"\x80", b"\xff\xff", b"\xff\xff\xff\xff"])
def test_unsigned_varint_truncated(bad):
    with pytest.raises(ProtocolError):
        T.read_unsigned_varint(bad, 0)


def test_unsigned_varint_too_long_or_too_big():
    with pytest.raises(ProtocolError):  # 6 bytes
        T.read_unsigned_varint(h("808080808001"), 0)
    with pytest.raises(ProtocolError):  # 5 bytes but 0x1f << 28 does not fit in 32 bits
        T.read_unsigned_varint(h("ffffffff1f"), 0)
    for bad in (-1, 1 << 32):
        with pytest.raises(ProtocolError):
            T.write_unsigned_varint(bytearray(), bad)


# --- zig-zag varint / varlong ------------------------------------------------------------------------------------

VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (2, "04"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (300, "d804"),  # zig-zag 600 = 0b100_1011000 -> 0xd8 0x04
    (T.INT32_MAX, "feffffff0f"),
    (T.INT32_MIN, "ffffffff0f"),
]


@pytest.mark.parametrize("value,hexbytes", VARINTS)
def test_varint_known_bytes(value, hexbytes):
    assert w(T.write_varint, value) == h(hexbytes)
    assert T.read_varint(h(hexbytes) + b"\x00", 0) == (value, len(h(hexbytes)))


VARLONGS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (300, "d804"),
    (T.INT32_MIN, "ffffffff0f"),
    (T.INT32_MAX + 1, "8080808010"),  # zig-zag 2^32 -> 4 x (0 | 0x80), then 2^32 >> 28 = 16
    (T.INT64_MAX, "feffffffffffffffff01"),
    (T.INT64_MIN, "ffffffffffffffffff01"),
]


@pytest.mark.parametrize("value,hexbytes", VARLONGS)
def test_varlong_known_bytes(value, hexbytes):
    assert w(T.write_varlong, value) == h(hexbytes)
    assert T.read_varlong(h(hexbytes), 0) == (value, len(h(hexbytes)))


def test_varint_errors():
    for bad in (T.INT32_MAX + 1, T.INT32_MIN - 1):
        with pytest.raises(ProtocolError):
            T.write_varint(bytearray(), bad)
    for bad in (T.INT64_MAX + 1, T.INT64_MIN - 1):
        with pytest.raises(ProtocolError):
            T.write_varlong(bytearray(), bad)
    with pytest.raises(ProtocolError):  # 6 bytes for a varint
        T.read_varint(h("808080808001"), 0)
    with pytest.raises(ProtocolError):  # 5 bytes whose value exceeds 32 bits
        T.read_varint(h("ffffffff1f"), 0)
    with pytest.raises(ProtocolError):  # 11 bytes for a varlong
        T.read_varlong(h("8080808080808080808001"), 0)
    with pytest.raises(ProtocolError):  # 10 bytes whose value exceeds 64 bits
        T.read_varlong(h("ffffffffffffffffff7f"), 0)
    for bad in (b"", b"\x80", h("ffffffff")):
        with pytest.raises(ProtocolError):
            T.read_varint(bad, 0)
        with pytest.raises(ProtocolError):
            T.read_varlong(bad, 0)


def test_varint_size():
    assert [T.varint_size(v) for v in (0, -1, 63, -64, 64, -65, T.INT32_MIN)] == [1, 1, 1, 1, 2, 2, 5]


@settings(max_examples=200, deadline=None)
@given(st.integers(T.INT64_MIN, T.INT64_MAX))
def test_varlong_zigzag_property(n):
    """Independent model of zig-zag + base-128: the encoding of n is the base-128 digits of 2|n| - (n < 0)."""
    z = 2 * n if n >= 0 else -2 * n - 1
    digits = []
    while True:
        digits.append(z & 0x7F)
        z >>= 7
        if not z:
            break
    expected = bytes([d | 0x80 for d in digits[:-1]] + [digits[-1]])
    assert w(T.write_varlong, n) == expected
    assert T.read_varlong(expected, 0) == (n, len(expected))
    if T.INT32_MIN <= n <= T.INT32_MAX:
        assert w(T.write_varint, n) == expected
        assert T.varint_size(n) == len(expected)


# --- fixed width -------------------------------------------------------------------------------------------------

FIXED = [
    (T.read_int8, T.write_int8, -128, "80"),
    (T.read_int8, T.write_int8, 127, "7f"),
    (T.read_int16, T.write_int16, -2, "fffe"),
    (T.read_int16, T.write_int16, 0x1234, "1234"),
    (T.read_int32, T.write_int32, 1, "00000001"),
    (T.read_int32, T.write_int32, T.INT32_MIN, "80000000"),
    (T.read_int64, T.write_int64, -1, "ffffffffffffffff"),
    (T.read_int64, T.write_int64, 0x0102030405060708, "0102030405060708"),
    (T.read_uint16, T.write_uint16, 65535, "ffff"),
    (T.read_uint32, T.write_uint32, 0xDEADBEEF, "deadbeef"),
    (T.read_float64, T.write_float64, 1.0, "3ff0000000000000"),
    (T.read_float64, T.write_float64, -2.5, "c004000000000000"),
]


@pytest.mark.parametrize("read,write,value,hexbytes", FIXED)
def test_fixed_width_known_bytes(read, write, value, hexbytes):
    raw = h(hexbytes)
    assert w(write, value) == raw
    assert read(b"\x00" + raw, 1) == (value, 1 + len(raw))
    with pytest.raises(ProtocolError):  # one byte short
        read(raw[:-1], 0)


@pytest.mark.parametrize("write,value", [(T.write_int8, 128), (T.write_int16, 40000), (T.write_int32, 1 << 31),
                                         (T.write_int64, 1 << 63), (T.write_uint16, -1), (T.write_int32, "x")])
def test_fixed_width_out_of_range(write, value):
    with pytest.raises(ProtocolError):
        write(bytearray(), value)


def test_boolean():
    assert w(T.write_bool, True) == b"\x01"
    assert w(T.write_bool, False) == b"\x00"
    assert T.read_bool(b"\x00", 0) == (False, 1)
    assert T.read_bool(b"\x01", 0) == (True, 1)
    assert T.read_bool(b"\x02", 0) == (True, 1)  # Java: any non-zero byte is true
    with pytest.raises(ProtocolError):
        T.read_bool(b"", 0)


# --- UUID --------------------------------------------------------------------------------------------------------

def test_uuid():
    u = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    raw = h("00112233445566778899aabbccddeeff")
    assert w(T.write_uuid, u) == raw
    assert T.read_uuid(b"\x01" + raw, 1) == (u, 17)
    assert w(T.write_uuid, None) == bytes(16)  # Kafka's ZERO_UUID stands for null
    assert T.read_uuid(bytes(16), 0) == (T.ZERO_UUID, 16)
    with pytest.raises(ProtocolError):
        T.read_uuid(raw[:15], 0)


# --- strings -----------------------------------------------------------------------------------------------------

STRINGS = [
    ("", "0000"),
    ("abc", "0003616263"),
    ("\u00e9", "0002c3a9"),  # é is two UTF-8 bytes
    ("\U0001f600", "0004f09f9880"),  # astral plane: 4 UTF-8 bytes (Java's modified UTF-8 is NOT used on the wire)
]


@pytest.mark.parametrize("value,hexbytes", STRINGS)
def test_string(value, hexbytes):
    assert w(T.write_string, value) == h(hexbytes)
    assert T.read_string(h(hexbytes), 0) == (value, len(h(hexbytes)))
    assert T.read_nullable_string(h(hexbytes), 0) == (value, len(h(hexbytes)))


def test_nullable_string():
    assert w(T.write_string, None) == h("ffff")
    assert T.read_nullable_string(h("ffff"), 0) == (None, 2)
    with pytest.raises(ProtocolError):  # null where the schema does not allow it
        T.read_string(h("ffff"), 0)
    with pytest.raises(ProtocolError):  # -2 is not a valid length
        T.read_nullable_string(h("fffe"), 0)


def test_string_errors():
    with pytest.raises(ProtocolError):  # length 5, 3 bytes present
        T.read_string(h("0005616263"), 0)
    with pytest.raises(ProtocolError):  # truncated length
        T.read_string(h("00"), 0)
    with pytest.raises(ProtocolError):  # invalid UTF-8
        T.read_string(h("0001ff"), 0)
    with pytest.raises(ProtocolError):  # lone surrogate cannot be UTF-8 encoded
        T.write_string(bytearray(), "\ud800")
    with pytest.raises(ProtocolError):  # INT16 length: at most 32767 bytes
        T.write_string(bytearray(), "x" * 32768)
    assert len(w(T.write_string, "x" * 32767)) == 2 + 32767


COMPACT_STRINGS = [
    ("", "01"),
    ("abc", "04616263"),
    ("\u00e9", "03c3a9"),
    ("x" * 127, "8001" + "78" * 127),  # length + 1 = 128 -> two-byte varint
]


@pytest.mark.parametrize("value,hexbytes", COMPACT_STRINGS)
def test_compact_string(value, hexbytes):
    assert w(T.write_compact_string, value) == h(hexbytes)
    assert T.read_compact_string(h(hexbytes), 0) == (value, len(h(hexbytes)))
    assert T.read_compact_nullable_string(h(hexbytes), 0) == (value, len(h(hexbytes)))


def test_compact_nullable_string():
    assert w(T.write_compact_string, None) == b"\x00"
    assert T.read_compact_nullable_string(b"\x00", 0) == (None, 1)
    with pytest.raises(ProtocolError):
        T.read_compact_string(b"\x00", 0)
    with pytest.raises(ProtocolError):  # announces 3 bytes, has 2
        T.read_compact_string(h("046162"), 0)
    with pytest.raises(ProtocolError):
        T.read_compact_string(h("02ff"), 0)  # invalid UTF-8
    with pytest.raises(ProtocolError):  # announces ~4 GiB in a 6-byte buffer
        T.read_compact_nullable_string(h("ffffffff0f00"), 0)


# --- bytes -------------------------------------------------------------------------------------------------------

def test_bytes():
    assert w(T.write_bytes, b"\x01\x02") == h("0000000201 02".replace(" ", ""))
    assert w(T.write_bytes, b"") == h("00000000")
    assert w(T.write_bytes, None) == h("ffffffff")
    assert T.read_bytes(h("000000020102"), 0) == (b"\x01\x02", 6)
    assert T.read_nullable_bytes(h("ffffffff"), 0) == (None, 4)
    with pytest.raises(ProtocolError):
        T.read_bytes(h("ffffffff"), 0)
    with pytest.raises(ProtocolError):  # -2
        T.read_nullable_bytes(h("fffffffe"), 0)
    with pytest.raises(ProtocolError):  # 2 GiB announced, 1 byte present
        T.read_bytes(h("7fffffff00"), 0)


def test_compact_bytes():
    assert w(T.write_compact_bytes, b"") == b"\x01"
    assert w(T.write_compact_bytes, None) == b"\x00"
    assert w(T.write_compact_bytes, b"\xaa\xbb") == h("03aabb")
    assert T.read_compact_bytes(h("03aabb"), 0) == (b"\xaa\xbb", 3)
    assert T.read_compact_nullable_bytes(b"\x00", 0) == (None, 1)
    with pytest.raises(ProtocolError):
        T.read_compact_bytes(b"\x00", 0)
    with pytest.raises(ProtocolError):
        T.read_compact_bytes(h("03aa"), 0)
    # reading from a memoryview returns real bytes, not a view into the frame
    value, _ = T.read_compact_bytes(memoryview(h("03aabb")), 0)
    assert type(value) is bytes and value == b"\xaa\xbb"


# --- arrays ------------------------------------------------------------------------------------------------------

def test_array_length():
    assert T.read_array_length(h("ffffffff"), 0) == (-1, 4)  # null array
    assert T.read_array_length(h("00000000"), 0) == (0, 4)
    assert T.read_array_length(h("00000002aabb"), 0) == (2, 4)
    with pytest.raises(ProtocolError):  # -2
        T.read_array_length(h("fffffffe"), 0)
    with pytest.raises(ProtocolError):  # 0x7fffffff elements in 2 bytes: rejected before any allocation
        T.read_array_length(h("7fffffffaabb"), 0)
    with pytest.raises(ProtocolError):  # 2 elements of >= 2 bytes cannot fit in 3 bytes
        T.read_array_length(h("00000002aabbcc"), 0, 2)


def test_compact_array_length():
    assert T.read_compact_array_length(b"\x00", 0) == (-1, 1)  # null
    assert T.read_compact_array_length(b"\x01", 0) == (0, 1)
    assert T.read_compact_array_length(h("03aabb"), 0) == (2, 1)
    with pytest.raises(ProtocolError):  # 0xfffffffe elements announced
        T.read_compact_array_length(h("ffffffff0f00"), 0)
    with pytest.raises(ProtocolError):
        T.read_compact_array_length(h("03aabb"), 0, 4)


# --- tagged fields -----------------------------------------------------------------------------------------------

def test_tagged_fields_write():
    assert w(T.write_tagged_fields, None) == b"\x00"
    assert w(T.write_tagged_fields, {}) == b"\x00"
    expected = h("02" "0001" "05" "0300")  # 2 fields: tag 0 size 1 [05]; tag 3 size 0
    assert w(T.write_tagged_fields, {0: b"\x05", 3: b""}) == expected
    # written in increasing tag order whatever the dict order
    assert w(T.write_tagged_fields, {3: b"", 0: b"\x05"}) == expected
    # big tag and size use varints: tag 300 = ac 02, size 128 = 80 01
    assert w(T.write_tagged_fields, {300: b"\x00" * 128}) == h("01ac028001") + b"\x00" * 128


def test_tagged_fields_read():
    assert T.read_tagged_fields(b"\x00", 0) == ({}, 1)
    assert T.read_tagged_fields(h("02000105030099"), 0) == ({0: b"\x05", 3: b""}, 6)
    with pytest.raises(ProtocolError):  # tags out of order: 3 then 0
        T.read_tagged_fields(h("0203000001 05".replace(" ", "")), 0)
    with pytest.raises(ProtocolError):  # duplicate tag
        T.read_tagged_fields(h("0200000000"), 0)
    with pytest.raises(ProtocolError):  # size 5 announced, 1 byte present
        T.read_tagged_fields(h("01000505"), 0)
    with pytest.raises(ProtocolError):  # 2^31 fields announced
        T.read_tagged_fields(h("8080808008"), 0)
    with pytest.raises(ProtocolError):  # count present, fields missing
        T.read_tagged_fields(h("01"), 0)

"""Hashing: Java String.hashCode, Kafka's Utils.abs / toPositive / murmur2, coordinator and key partitioning."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st
from kafka.partitioner.default import murmur2 as kp_murmur2

from protocol.hashing import (
    coordinator_partition,
    java_string_hash,
    kafka_abs,
    murmur2,
    partition_for_key,
    to_positive,
)

INT_MIN = -(1 << 31)


def reference_java_hash(s: str) -> int:
    """An independent reimplementation: iterate the UTF-16 code units of the UTF-16BE encoding, plain ints,
    wrap to signed 32 bits at the end (31*h + c modulo 2**32 commutes with the final reduction)."""
    raw = s.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(raw) // 2}H", raw)
    h = 0
    for u in units:
        h = h * 31 + u
    h %= 1 << 32
    return h - (1 << 32) if h >= 1 << 31 else h


# Hand-derived vectors (h = sum c_i * 31**(n-1-i) mod 2**32, signed):
HAND_VECTORS = [
    ("", 0),
    ("a", 97),
    ("ab", 97 * 31 + 98),                     # 3105
    ("hello", 99162322),
    ("é", 0xE9),                              # BMP non-ASCII: one code unit 233
    ("日本", 0x65E5 * 31 + 0x672C),           # 26085*31 + 26412 = 835047
    ("\U0001F600", 0xD83D * 31 + 0xDE00),     # astral: surrogate pair D83D DE00 -> 1772899
    ("a\U0001F600", (97 * 31 + 0xD83D) * 31 + 0xDE00),
    ("\ud800", 0xD800),                      # a lone surrogate is one unit, as Java stores it
]


@pytest.mark.parametrize("s,expected", HAND_VECTORS)
def test_java_string_hash_hand_vectors(s, expected):
    assert java_string_hash(s) == expected
    assert reference_java_hash(s) == expected


def test_java_string_hash_overflow_wraps_signed():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE is a classic Java example; checked independently too.
    for s in ("polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"):
        assert reference_java_hash(s) == INT_MIN
        assert java_string_hash(s) == INT_MIN
    assert java_string_hash("a" * 20) == reference_java_hash("a" * 20)
    assert -(1 << 31) <= java_string_hash("x" * 1000) < (1 << 31)


@given(st.text())
def test_java_string_hash_matches_reference(s):
    assert java_string_hash(s) == reference_java_hash(s)


@given(st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), max_size=8))
def test_astral_chars_count_as_two_units(s):
    assert java_string_hash(s) == reference_java_hash(s)


def test_kafka_abs():
    # Kafka's UtilsTest.testAbs
    assert kafka_abs(INT_MIN) == 0
    assert kafka_abs(-10) == 10
    assert kafka_abs(10) == 10
    assert kafka_abs(0) == 0
    assert kafka_abs(-1) == 1
    assert kafka_abs((1 << 31) - 1) == (1 << 31) - 1


def test_to_positive():
    assert to_positive(INT_MIN) == 0
    assert to_positive(-1) == (1 << 31) - 1
    assert to_positive(5) == 5
    assert to_positive(-5) == (1 << 31) - 5


def test_coordinator_partition_min_value_group():
    group = "polygenelubricants"
    h = java_string_hash(group)
    assert h == INT_MIN
    assert coordinator_partition(group) == 0          # Kafka: Utils.abs(MIN_VALUE) == 0, 0 % 50 == 0
    # The seeds' formula abs(hash) % 50 is wrong exactly here: Python's abs gives 2**31 and 2147483648 % 50 == 48.
    assert abs(h) % 50 == 48
    assert coordinator_partition(group, 7) == 0


@given(st.text(max_size=64), st.integers(min_value=1, max_value=1000))
def test_coordinator_partition_formula(group, n):
    h = reference_java_hash(group)
    expected = (0 if h == INT_MIN else abs(h)) % n
    assert coordinator_partition(group, n) == expected
    assert 0 <= coordinator_partition(group, n) < n


def test_coordinator_partition_examples():
    # by hand: "ab" -> 3105 -> 3105 % 50 = 5; "" -> 0
    assert coordinator_partition("ab") == 5
    assert coordinator_partition("") == 0
    assert coordinator_partition("hello") == 99162322 % 50
    with pytest.raises(ValueError):
        coordinator_partition("g", 0)


# Kafka's UtilsTest.testMurmur2 vectors (signed Java ints), plus the empty array.
MURMUR2_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
    (b"", 275646681),
]


@pytest.mark.parametrize("data,expected", MURMUR2_VECTORS)
def test_murmur2_kafka_vectors(data, expected):
    assert murmur2(data) == expected


def _signed(u: int) -> int:
    return u - (1 << 32) if u >= 1 << 31 else u


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_murmur2_matches_kafka_python(data):
    # kafka-python returns the unsigned 32-bit pattern; Kafka's Java returns it as a signed int.
    assert murmur2(data) == _signed(kp_murmur2(data))
    assert -(1 << 31) <= murmur2(data) < (1 << 31)


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=500))
def test_partition_for_key(key, n):
    assert partition_for_key(key, n) == (kp_murmur2(key) & 0x7FFFFFFF) % n


def test_partition_for_key_examples():
    # toPositive(-790332482) = 1357151166; % 50 = 16 ; % 12 = 6
    assert partition_for_key(b"foobar", 50) == 16
    assert partition_for_key(b"foobar", 12) == 1357151166 % 12
    assert murmur2(bytearray(b"abc")) == 479470107
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)

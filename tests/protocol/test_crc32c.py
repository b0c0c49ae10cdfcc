"""CRC-32C: published check values, RFC 3720 vectors, incremental use, and kafka-python as an oracle."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st
from kafka.record._crc32c import crc as kp_crc32c

from protocol.crc32c import crc32c


def bitwise_crc32c(data: bytes) -> int:
    """Independent bit-at-a-time reference (reflected polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def test_check_value():
    assert crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize("data,expected", [
    (bytes(32), 0x8A9136AA),                 # RFC 3720 B.4: 32 bytes of zeroes
    (b"\xff" * 32, 0x62A8AB43),              # 32 bytes of ones
    (bytes(range(32)), 0x46DD794E),          # 32 incrementing bytes 00..1f
    (bytes(range(31, -1, -1)), 0x113FDB5C),  # 32 decrementing bytes 1f..00
    (b"", 0),
])
def test_rfc3720_vectors(data, expected):
    assert crc32c(data) == expected


def test_accepts_bytes_like():
    assert crc32c(bytearray(b"123456789")) == 0xE3069283
    assert crc32c(memoryview(b"xx123456789")[2:]) == 0xE3069283


@given(st.binary(max_size=300))
def test_matches_bitwise_reference(data):
    assert crc32c(data) == bitwise_crc32c(data)


@settings(max_examples=200)
@given(st.binary(max_size=2000))
def test_matches_kafka_python(data):
    assert crc32c(data) == kp_crc32c(data)


@given(st.binary(max_size=200), st.binary(max_size=200), st.binary(max_size=50))
def test_incremental_equals_one_shot(a, b, c):
    assert crc32c(c, crc32c(b, crc32c(a))) == crc32c(a + b + c)


def test_throughput_is_reasonable():
    data = bytes(range(256)) * 1024  # 256 KiB
    start = time.perf_counter()
    assert crc32c(data) == kp_crc32c(data)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0  # ~20 MB/s here; a generous bound so CI noise cannot fail it

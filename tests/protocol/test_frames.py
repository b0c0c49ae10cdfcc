"""Framing (protocol/frames.py): the incremental FrameReader and request/response headers.

Expected bytes are written out by hand from Kafka's RequestHeader.json / ResponseHeader.json:
request header v1 = api_key INT16, api_version INT16, correlation_id INT32, client_id NULLABLE_STRING;
v2 = v1 + tagged fields (client_id stays a non-compact INT16-length string: flexibleVersions "none");
response header v0 = correlation_id INT32; v1 = v0 + tagged fields; ApiVersions responses always use v0.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

import protocol  # noqa: F401
from protocol import frames
from protocol.api import APIS
from protocol.exceptions import FrameTooLarge, ProtocolError, UnsupportedVersion
from protocol.frames import FrameReader

MiB = 1 << 20


def be32(n: int) -> bytes:
    return struct.pack(">i", n)


# --- FrameReader -------------------------------------------------------------------------------------------------

def test_one_frame_in_one_feed():
    r = FrameReader()
    assert r.feed(be32(3) + b"abc") == [b"abc"]
    assert r.buffered == 0 and r.pending_frame_size is None


def test_several_frames_in_one_feed_and_a_partial_tail():
    r = FrameReader()
    stream = be32(1) + b"x" + be32(0) + be32(2) + b"yz" + be32(5) + b"ab"
    assert r.feed(stream) == [b"x", b"", b"yz"]
    assert r.pending_frame_size == 5 and r.buffered == 2  # prefix consumed, 2 of 5 body bytes held
    assert r.feed(b"c") == []
    assert r.feed(b"de" + be32(1)) == [b"abcde"]
    assert r.pending_frame_size == 1 and r.buffered == 0  # the next prefix is read as soon as it is complete
    assert r.feed(b"!") == [b"!"]
    assert r.buffered == 0


def test_byte_by_byte():
    payloads = [b"hello", b"", b"\x00" * 300, b"kafka"]
    stream = b"".join(be32(len(p)) + p for p in payloads)
    r = FrameReader()
    out = []
    for i in range(len(stream)):
        out += r.feed(stream[i:i + 1])
    assert out == payloads and r.buffered == 0


def test_empty_feed():
    r = FrameReader()
    assert r.feed(b"") == []
    assert r.feed(be32(1)[:2]) == [] and r.buffered == 2 and r.pending_frame_size is None


@settings(max_examples=60, deadline=None)
@given(payloads=st.lists(st.binary(max_size=40), max_size=6), data=st.data())
def test_random_split_points(payloads, data):
    stream = b"".join(be32(len(p)) + p for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    r = FrameReader(max_frame_bytes=64)
    out = []
    prev = 0
    for c in cuts + [len(stream)]:
        out += r.feed(stream[prev:c])
        prev = c
    assert out == payloads
    assert r.buffered == 0 and r.pending_frame_size is None


def test_frame_of_exactly_the_maximum_is_accepted():
    r = FrameReader(max_frame_bytes=8)
    assert r.feed(be32(8) + b"12345678") == [b"12345678"]


def test_size_above_maximum_rejected_before_buffering_the_body():
    """A 4-byte prefix announcing 2 GiB with a 1 MiB maximum raises at once: nothing near 2 GiB (nor 1 MiB) is
    allocated and only the prefix is buffered."""
    r = FrameReader(max_frame_bytes=MiB)
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLarge) as exc:
            r.feed(be32(0x7FFFFFFF))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert exc.value.size == 0x7FFFFFFF and exc.value.max_size == MiB
    assert isinstance(exc.value, ProtocolError)
    assert r.buffered <= 4
    assert peak < 64 * 1024, peak


def test_size_above_maximum_split_prefix():
    r = FrameReader(max_frame_bytes=MiB)
    assert r.feed(be32(MiB + 1)[:3]) == []
    with pytest.raises(FrameTooLarge):
        r.feed(be32(MiB + 1)[3:])
    assert r.buffered <= 4


def test_size_above_maximum_after_a_good_frame():
    r = FrameReader(max_frame_bytes=16)
    with pytest.raises(FrameTooLarge):
        r.feed(be32(1) + b"a" + be32(17))


@pytest.mark.parametrize("size", [-1, -2, -(2**31)])
def test_negative_size(size):
    r = FrameReader()
    with pytest.raises(ProtocolError) as exc:
        r.feed(be32(size))
    assert not isinstance(exc.value, FrameTooLarge)


def test_max_must_be_positive():
    with pytest.raises(ValueError):
        FrameReader(max_frame_bytes=0)


def test_frame_helper():
    assert frames.frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frames.frame(bytearray()) == b"\x00\x00\x00\x00"


# --- request headers ---------------------------------------------------------------------------------------------

def _heartbeat():
    return APIS[12].request.cls(group_id="g", generation_id=1, member_id="m")


def test_request_header_v1_bytes():
    raw = frames.encode_request(12, 0, 7, "c", _heartbeat())
    header = "000c" "0000" "00000007" "0001" "63"
    body = "0001" "67" "00000001" "0001" "6d"
    payload = bytes.fromhex(header + body)
    assert raw == be32(len(payload)) + payload


def test_request_header_v1_null_client_id():
    raw = frames.encode_request(12, 3, -1, None, _heartbeat())
    assert raw[4:].hex().startswith("000c" "0003" "ffffffff" "ffff")
    header, body = frames.decode_request(raw[4:])
    assert header.client_id is None and header.correlation_id == -1 and header.header_version == 1
    assert body == _heartbeat()


def test_request_header_v2_bytes_client_id_not_compact():
    raw = frames.encode_request(12, 4, 7, "c", _heartbeat())
    # client_id keeps its INT16 length in header v2 ("0001 63", not compact "02 63"), then empty tagged fields
    header = "000c" "0004" "00000007" "0001" "63" "00"
    body = "02" "67" "00000001" "02" "6d" "00" "00"
    assert raw[4:] == bytes.fromhex(header + body)
    hdr, offset = frames.decode_request_header(raw[4:])
    assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id, hdr.header_version) == \
        (12, 4, 7, "c", 2)
    assert offset == len(bytes.fromhex(header))


def test_request_header_v2_tagged_fields_are_read():
    payload = bytes.fromhex("000c" "0004" "00000007" "ffff" "01" "05" "02" "abcd"
                            "02" "67" "00000001" "02" "6d" "00" "00")
    hdr, body = frames.decode_request(payload)
    assert hdr.unknown_tagged_fields == {5: b"\xab\xcd"} and hdr.client_id is None
    assert body == _heartbeat()


def test_request_trailing_bytes_ignored():
    raw = frames.encode_request(12, 0, 7, "c", _heartbeat())[4:] + b"\x00\x01"
    assert frames.decode_request(raw)[1] == _heartbeat()


@pytest.mark.parametrize("key", sorted(APIS))
def test_request_header_version_follows_flexible_versions(key):
    api = APIS[key]
    for v in range(api.min_version, api.max_version + 1):
        raw = frames.encode_request(key, v, 99, "id", api.request.cls())
        hdr, body = frames.decode_request(raw[4:])
        assert hdr.header_version == (2 if api.request.is_flexible(v) else 1)
        assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id) == (key, v, 99, "id")
        assert body == api.request.cls()


def test_request_header_too_short():
    for n in range(8):
        with pytest.raises(ProtocolError):
            frames.decode_request_header(bytes.fromhex("000c000400000007")[:n])
    with pytest.raises(ProtocolError):  # client_id length 5, 1 byte present
        frames.decode_request_header(bytes.fromhex("000c000000000007" "0005" "63"))


def test_unknown_api_key_raises_unsupported_version_with_header():
    payload = bytes.fromhex("7fff" "0003" "0000002a" "0001" "63")
    with pytest.raises(UnsupportedVersion) as exc:
        frames.decode_request(payload)
    hdr = exc.value.header
    assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id) == (0x7FFF, 3, 42, "c")
    assert exc.value.api_key == 0x7FFF and isinstance(exc.value, ProtocolError)


def test_unsupported_version_raises_with_header():
    api = APIS[12]
    too_high = api.max_version + 1
    payload = bytes.fromhex("000c") + struct.pack(">h", too_high) + bytes.fromhex("0000002b" "ffff" "00")
    with pytest.raises(UnsupportedVersion) as exc:
        frames.decode_request(payload)
    assert exc.value.header.correlation_id == 43
    assert (exc.value.api_key, exc.value.version) == (12, too_high)
    with pytest.raises(UnsupportedVersion):
        frames.decode_request(bytes.fromhex("000c" "ffff" "0000002b" "ffff"))  # version -1


def test_api_versions_above_range_read_with_header_v2():
    """KIP-511: a client may send ApiVersions at a version the broker does not know; the header is still parsed
    (as v2, since the version is flexible-range) so the broker can answer with the correlation id."""
    api = APIS[18]
    v = api.max_version + 1
    payload = (bytes.fromhex("0012") + struct.pack(">h", v) + bytes.fromhex("00000009" "0003" "636c69" "00")
               + bytes.fromhex("03" "6b7031" "02" "33" "00"))
    with pytest.raises(UnsupportedVersion) as exc:
        frames.decode_request(payload)
    hdr = exc.value.header
    assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id, hdr.header_version) == \
        (18, v, 9, "cli", 2)


def test_encode_request_unsupported():
    with pytest.raises(UnsupportedVersion):
        frames.encode_request(12, APIS[12].max_version + 1, 1, None, _heartbeat())
    with pytest.raises(UnsupportedVersion):
        frames.encode_request(0x7FFF, 0, 1, None, _heartbeat())
    with pytest.raises(ProtocolError):  # a body that does not fit the schema
        frames.encode_request(12, 0, 1, None, APIS[12].request.cls(group_id=None))


# --- response headers --------------------------------------------------------------------------------------------

def test_response_header_v0_and_v1_bytes():
    body = APIS[12].response.cls(throttle_time_ms=1, error_code=0)
    assert frames.encode_response(12, 0, 7, body) == be32(6) + bytes.fromhex("00000007" "0000")
    assert frames.encode_response(12, 4, 7, body) == be32(12) + bytes.fromhex("00000007" "00" "00000001" "0000"
                                                                                "00")
    assert frames.decode_response(12, 4, bytes.fromhex("00000007" "00" "00000001" "0000" "00")) == (7, body)
    # header v1 tagged fields are skipped
    assert frames.decode_response(12, 4, bytes.fromhex("00000007" "01" "00" "01" "ff" "00000001" "0000" "00")) \
        == (7, body)


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_response_always_header_v0(version):
    api = APIS[18]
    if not api.supports(version):
        pytest.skip("version not registered")
    R = api.response.cls
    body = R(error_code=0, api_keys=[R.ApiVersion(api_key=18, min_version=0, max_version=4)])
    raw = frames.encode_response(18, version, 5, body)
    # correlation id, then the body directly (no tagged-field byte even for flexible v3+)
    assert raw[4:8] == be32(5)
    assert raw[8:10] == b"\x00\x00"  # error_code starts the body right after the correlation id
    assert api.response_header_version(version) == 0
    assert frames.decode_response(18, version, raw[4:]) == (5, body)


def test_response_header_version_rule():
    for key, api in APIS.items():
        for v in range(api.min_version, api.max_version + 1):
            expected = 0 if key == 18 else (1 if api.response.is_flexible(v) else 0)
            assert api.response_header_version(v) == expected, (api.name, v)


def test_decode_response_truncated():
    with pytest.raises(ProtocolError):
        frames.decode_response(12, 0, b"\x00\x00\x00")
    with pytest.raises(ProtocolError):
        frames.decode_response(12, 4, b"\x00\x00\x00\x07")  # no tagged-field byte
    with pytest.raises(UnsupportedVersion):
        frames.decode_response(0x7FFF, 0, b"\x00\x00\x00\x07")


def test_peek_correlation_id():
    assert frames.peek_correlation_id(bytes.fromhex("fffffffe00")) == -2
    with pytest.raises(ProtocolError):
        frames.peek_correlation_id(b"\x00")

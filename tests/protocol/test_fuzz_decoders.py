"""Hostile input: decoders raise only ProtocolError and never allocate more than the frame justifies.

For every (API, version) in the registry, requests and responses:

* every strict prefix of a valid encoding raises ProtocolError (a decoder that reads past the end, or that
  accepts a shorter message, fails here);
* every single-byte corruption of a valid encoding either decodes or raises ProtocolError;
* a length or count of 0x7fffffff (INT32 fields) or 0xfffffffe (UNSIGNED_VARINT, flexible versions) written over
  every offset of a valid encoding raises ProtocolError or decodes, with a tracemalloc peak bounded by a small
  multiple of the input size -- the count is checked against the bytes left before anything is allocated;
* arbitrary bytes (hypothesis) into every decoder, and into decode_request / FrameReader, raise only
  ProtocolError.

The memory bound: Python objects are larger than their wire form (an element of 2-4 bytes on the wire becomes a
56-100 byte object), so "never more than the frame" is checked as peak <= BASE + FACTOR * len(input), with
FACTOR = 64: a hostile count that was honoured would allocate gigabytes, an honest dense frame about 10-30x.
"""

from __future__ import annotations

import os
import random
import struct
import sys
import tracemalloc
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import protocol  # noqa: F401
from protocol import frames
from protocol import types as T
from protocol.api import APIS
from protocol.exceptions import ProtocolError
from protocol.schema import Message

sys.path.insert(0, os.path.dirname(__file__))
from test_schemas_roundtrip import MESSAGES, MESSAGE_IDS  # noqa: E402

BASE = 64 * 1024
FACTOR = 64
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def decode_or_protocol_error(message: Message, buf, version: int):
    """Decode; a ProtocolError is fine, any other exception fails the test (pytest shows it)."""
    try:
        return message.decode(buf, version)
    except ProtocolError:
        return None


# --- a deterministic "rich" object per (message, version): every field present and non-default -------------------

_SCALARS = {"int8": 0x55, "int16": 0x1234, "int32": 0x01020304, "int64": 0x0102030405060708, "uint16": 0xBEEF,
            "float64": 1.5, "bool": True, "uuid": uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF),
            "string": "s\u00e9", "bytes": b"\x01\x02\x03", "records": b"\x04\x05"}


def rich(cls: type, version: int, flexible: bool):
    kwargs = {}
    for f in cls._fields:
        if not f.present(version):
            continue
        if f.is_struct:
            one = lambda: rich(getattr(cls, f.elem_type), version, flexible)  # noqa: E731
            kwargs[f.name] = [one(), one()] if f.is_array else one()
        elif f.is_array:
            kwargs[f.name] = [_SCALARS[f.elem_type]] * 2
        else:
            kwargs[f.name] = _SCALARS[f.type]
    obj = cls(**kwargs)
    if flexible:
        known = {f.tag for f in cls._fields if f.tag is not None}
        obj.unknown_tagged_fields = {max(known, default=0) + 50: b"\x09\x09"}
    return obj


def encodings(message: Message, version: int) -> list[bytes]:
    flexible = message.is_flexible(version)
    return [message.encode(message.cls(), version), message.encode(rich(message.cls, version, flexible), version)]


# --- truncation and corruption of valid encodings --------------------------------------------------------------

@pytest.mark.parametrize("name,message,version", MESSAGES, ids=MESSAGE_IDS)
def test_truncated_and_corrupted_encodings(name, message, version):
    for raw in encodings(message, version):
        assert message.decode(raw, version) is not None
        for n in range(len(raw)):
            with pytest.raises(ProtocolError):
                message.decode(raw[:n], version)
        for i in range(len(raw)):
            for b in (0x00, 0x7F, 0x80, 0xFF):
                if raw[i] != b:
                    decode_or_protocol_error(message, raw[:i] + bytes([b]) + raw[i + 1:], version)


# --- hostile lengths and counts, with a memory bound ----------------------------------------------------------

def _hostile_variants(raw: bytes, flexible: bool):
    """Yield `raw` with a huge INT32 (0x7fffffff) written over each offset, and -- in flexible versions -- a huge
    UNSIGNED_VARINT (0xfffffffe as ff ff ff ff 0f) inserted at each offset in place of one byte."""
    big32 = b"\x7f\xff\xff\xff"
    for i in range(len(raw)):
        yield raw[:i] + big32 + raw[i + 4:]
        if flexible:
            yield raw[:i] + b"\xfe\xff\xff\xff\x0f" + raw[i + 1:]


@pytest.mark.parametrize("name,message,version", MESSAGES, ids=MESSAGE_IDS)
def test_hostile_counts_do_not_allocate(name, message, version):
    flexible = message.is_flexible(version)
    raw = encodings(message, version)[1]
    message.codec(version)  # compile outside the measurement
    worst = 0
    tracemalloc.start()
    try:
        for bad in _hostile_variants(raw, flexible):
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            decode_or_protocol_error(message, bad, version)
            _, peak = tracemalloc.get_traced_memory()
            worst = max(worst, peak - base)
    finally:
        tracemalloc.stop()
    assert worst <= BASE + FACTOR * (len(raw) + 5), (name, worst, len(raw))


def _dense_frames():
    """Large valid frames packed with minimal elements: the most objects per input byte a peer can make us build."""
    out = []
    n = 20000
    # DescribeGroups v5 request: compact array of n empty compact strings (1 byte each)
    body = bytearray()
    T.write_unsigned_varint(body, n + 1)
    body += b"\x01" * n + b"\x00" + b"\x00"  # include_authorized_operations, tagged fields
    out.append(("DescribeGroupsRequest-v5", APIS[15].request, 5, bytes(body)))
    # LeaveGroup v4 request: n members of 3 bytes (member_id "", group_instance_id null, tagged fields)
    body = bytearray(b"\x01")  # group_id ""
    T.write_unsigned_varint(body, n + 1)
    body += b"\x01\x00\x00" * n + b"\x00"
    out.append(("LeaveGroupRequest-v4", APIS[13].request, 4, bytes(body)))
    # OffsetDelete v0 request: n partitions of one INT32 each
    body = bytearray(b"\x00\x00" + struct.pack(">i", 1) + b"\x00\x00" + struct.pack(">i", n))
    body += b"\x00\x00\x03\xe8" * n  # partition 1000 (not a cached small int)
    out.append(("OffsetDeleteRequest-v0", APIS[47].request, 0, bytes(body)))
    return out


@pytest.mark.parametrize("name,message,version,raw", _dense_frames(), ids=[d[0] for d in _dense_frames()])
def test_dense_frame_allocation_is_bounded_by_the_frame(name, message, version, raw):
    message.codec(version)
    tracemalloc.start()
    try:
        obj = message.decode(raw, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert obj is not None
    assert peak <= BASE + FACTOR * len(raw), (peak, len(raw), peak / len(raw))


def test_hostile_array_count_in_small_frame():
    """0x7fffffff DescribeGroups entries announced in a 1 KiB frame: rejected, with no big allocation."""
    message = APIS[15].request
    message.codec(0)
    raw = b"\x7f\xff\xff\xff" + b"\x00\x00" * 512
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            message.decode(raw, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 4 * len(raw) + 16 * 1024, peak


# --- arbitrary bytes -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,message,version", MESSAGES, ids=MESSAGE_IDS)
def test_random_bytes_seeded(name, message, version):
    """Deterministic random inputs for every (API, version): pure noise and valid prefixes with noisy tails."""
    rng = random.Random(f"{name}")
    valid = encodings(message, version)[1]
    for _ in range(40):
        decode_or_protocol_error(message, rng.randbytes(rng.randrange(0, 64)), version)
        cut = rng.randrange(0, len(valid) + 1)
        decode_or_protocol_error(message, valid[:cut] + rng.randbytes(rng.randrange(0, 16)), version)


@FUZZ
@given(case=st.sampled_from(MESSAGES), data=st.binary(max_size=200))
def test_arbitrary_bytes_any_decoder(case, data):
    _, message, version = case
    decode_or_protocol_error(message, data, version)
    decode_or_protocol_error(message, memoryview(data), version)


def _request_prefixes():
    out = []
    for key, api in sorted(APIS.items()):
        for v in (api.min_version, api.max_version):
            out.append(frames.encode_request(key, v, 1, "c", api.request.cls())[4:])
    return out


@FUZZ
@given(prefix=st.sampled_from(_request_prefixes()), cut=st.integers(0, 64), tail=st.binary(max_size=64))
def test_arbitrary_request_frames(prefix, cut, tail):
    """A valid header (any API and version) followed by noise: decode_request raises only ProtocolError."""
    try:
        frames.decode_request(prefix[:cut] + tail)
    except ProtocolError:
        pass


@FUZZ
@given(data=st.binary(max_size=200))
def test_arbitrary_request_bytes(data):
    try:
        frames.decode_request(data)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None)
@given(chunks=st.lists(st.binary(max_size=40), max_size=8))
def test_frame_reader_arbitrary_stream(chunks):
    r = frames.FrameReader(max_frame_bytes=1024)
    try:
        for c in chunks:
            for f in r.feed(c):
                assert len(f) <= 1024
    except ProtocolError:
        pass
    assert r.buffered <= 1024 + 4 + 40

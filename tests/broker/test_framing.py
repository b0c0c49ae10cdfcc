"""Bad input never takes the server down: each bad connection is closed (as Kafka's SocketServer does) or gets
Kafka's error answer, and a second, healthy connection is verified after each case."""

from __future__ import annotations

import asyncio
import logging
import os
import struct

import pytest

from broker.server import KGroupServer
from protocol.frames import encode_request
from protocol.messages import ApiVersionsRequest, HeartbeatRequest
from broker_harness import TIMEOUT, healthy

MAX = 1 << 20  # the fixture's --max-request-bytes


def _header(api_key: int, version: int, corr: int = 7, client_id: bytes = b"bad", v2: bool = False) -> bytes:
    h = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id
    return h + (b"\x00" if v2 else b"")


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _expect_closed(reader: asyncio.StreamReader) -> None:
    """The server closes the connection without answering."""
    data = await asyncio.wait_for(reader.read(65536), TIMEOUT)
    assert data == b"", f"expected the connection to be closed, got {data!r}"


CASES = {
    # garbage: a frame whose header is shorter than a request header
    "garbage_short": _frame(b"\x01\x02\x03"),
    # random bytes with a plausible size: unknown API key / unreadable header
    "garbage_random": _frame(b"\x7f\x7f" + os.urandom(30)),
    # a size prefix above max.request.bytes: closed before any body is sent
    "oversized_prefix": struct.pack(">i", MAX + 1),
    "huge_prefix": struct.pack(">i", 2**31 - 1),
    "negative_size": struct.pack(">i", -1),
    # a well-formed header of an API key Kafka does not know
    "unknown_api_key": _frame(_header(999, 0)),
    # a Produce v9 header without a body (every known API is served since issue 8: an unreadable body)
    "unserved_api": _frame(_header(0, 9)),
    # an unsupported version of a known API other than ApiVersions
    "unsupported_version": _frame(_header(12, 99, v2=True) + b"\x00" * 20),
    # a header whose client_id length points past the end of the frame
    "bad_client_id_length": _frame(struct.pack(">hhih", 18, 0, 1, 500) + b"abc"),
    # a valid Heartbeat v4 header but a truncated body
    "truncated_body": encode_request(12, 4, 3, "c", HeartbeatRequest(group_id="g" * 40, generation_id=1,
                                                                       member_id="m"))[:-30],
    # a string length that is negative (non-null) inside the body
    "negative_string_length": _frame(_header(12, 0) + struct.pack(">h", -5) + b"\x00" * 12),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_bad_frame_closes_only_that_connection(server: KGroupServer, case: str, caplog) -> None:
    bystander = await asyncio.open_connection(*server.address(0))  # another client, connected before
    reader, writer = await asyncio.open_connection(*server.address(0))
    payload = CASES[case]
    if case == "truncated_body":
        # the size prefix announces the full length but fewer bytes arrive; fix the prefix to the real length so
        # the server receives a complete frame whose body is cut short
        payload = struct.pack(">i", len(payload) - 4) + payload[4:]
    with caplog.at_level(logging.WARNING, logger="kgroup.server"):
        writer.write(payload)
        await writer.drain()
        await _expect_closed(reader)
        await asyncio.sleep(0.01)
    writer.close()
    closing = [r for r in caplog.records if "closing the connection" in r.getMessage()]
    assert len(closing) == 1, [r.getMessage() for r in caplog.records]  # logged once
    # the server still runs and the other connections are unaffected
    await healthy(server)
    br, bw = bystander
    bw.write(encode_request(18, 0, 99, "ok", ApiVersionsRequest()))
    await bw.drain()
    size = struct.unpack(">i", await asyncio.wait_for(br.readexactly(4), TIMEOUT))[0]
    body = await asyncio.wait_for(br.readexactly(size), TIMEOUT)
    assert struct.unpack(">i", body[:4])[0] == 99
    bw.close()


async def test_truncated_frame_then_client_closes(server: KGroupServer, caplog) -> None:
    reader, writer = await asyncio.open_connection(*server.address(1))
    with caplog.at_level(logging.WARNING, logger="kgroup.server"):
        writer.write(struct.pack(">i", 100) + b"\x00" * 20)  # 20 of the 100 announced bytes
        await writer.drain()
        writer.close()
        for _ in range(100):
            if any("inside a request" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.01)
    assert sum("inside a request" in r.getMessage() for r in caplog.records) == 1
    await healthy(server, 1)


async def test_oversized_prefix_is_rejected_before_the_body_is_read(server: KGroupServer) -> None:
    """The connection is closed as soon as the 4-byte prefix arrives; the body is never waited for."""
    reader, writer = await asyncio.open_connection(*server.address(2))
    writer.write(struct.pack(">i", MAX + 1))  # no body follows
    await writer.drain()
    await _expect_closed(reader)
    writer.close()
    await healthy(server, 2)


async def test_client_disconnects_mid_prefix_and_mid_conversation(server: KGroupServer) -> None:
    for chunk in (b"", b"\x00", b"\x00\x00\x00"):
        _, writer = await asyncio.open_connection(*server.address(0))
        writer.write(chunk)
        await writer.drain()
        writer.transport.abort()
    await asyncio.sleep(0.05)
    await healthy(server)


async def test_a_request_just_under_the_limit_is_read(server: KGroupServer) -> None:
    """A frame of exactly max.request.bytes is accepted (then answered: trailing bytes are ignored, as Kafka)."""
    reader, writer = await asyncio.open_connection(*server.address(0))
    req = encode_request(18, 0, 5, "big", ApiVersionsRequest())[4:]
    payload = req + b"\x00" * (MAX - len(req))
    writer.write(struct.pack(">i", len(payload)) + payload)
    await writer.drain()
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
    body = await asyncio.wait_for(reader.readexactly(size), TIMEOUT)
    assert struct.unpack(">i", body[:4])[0] == 5
    writer.close()

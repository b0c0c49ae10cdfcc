"""Connections over TCP (Kafka's SocketServer.Processor: one request at a time per connection, the channel muted until
the response is sent): pipelined requests are answered in order, a parked JoinGroup holds back its connection
only, many connections at once, frames arriving in one write, shutdown closing connections and parked requests."""

from __future__ import annotations

import asyncio
import struct

import pytest

from broker.server import KGroupServer
from client.wire import ConnectionClosed
from protocol.errors import ErrorCode
from protocol.frames import encode_request
from protocol.messages import ApiVersionsRequest, ListGroupsRequest
from broker_harness import TIMEOUT, Member, connect, healthy, make_settings, start_server

E = ErrorCode

async def test_many_connections_at_once(server: KGroupServer) -> None:
    clients = await asyncio.gather(*(connect(server, i % 3) for i in range(60)))
    try:
        rs = await asyncio.gather(*(c.call(ListGroupsRequest(), 4, timeout=TIMEOUT) for c in clients))
        assert all(r.error_code == 0 for r in rs)
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    await healthy(server)


async def test_pipelined_requests_answered_in_order_behind_a_parked_join(server: KGroupServer) -> None:
    """SocketServer mutes a channel while a request is in flight: the ApiVersions sent after a parked JoinGroup
    is answered after it, on the same connection."""
    m = Member(server, "pipe", "pipe-0")
    await m.find_coordinator()
    r = await m.join_once()
    assert r.error_code == E.MEMBER_ID_REQUIRED
    order: list[str] = []
    join = m.send_join()  # parked for the initial rebalance delay (200 ms)
    av = m.conn.send(ApiVersionsRequest(), 0)
    join.add_done_callback(lambda _: order.append("join"))
    av.add_done_callback(lambda _: order.append("api_versions"))
    await asyncio.wait_for(asyncio.gather(join, av), TIMEOUT)
    assert order == ["join", "api_versions"]
    assert join.result().error_code == E.NONE
    await m.close()


async def test_stopping_the_server_closes_connections_and_parked_requests() -> None:
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=5000))
    m = Member(srv, "shutdown", "s-0")
    await m.find_coordinator()
    await m.join_once()
    parked = m.send_join()  # parked for the 5 s initial delay
    await asyncio.sleep(0.05)
    await asyncio.wait_for(srv.close(), TIMEOUT)
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(parked, TIMEOUT)
    await m.close()


async def test_raw_pipelined_frames_in_one_write(server: KGroupServer) -> None:
    """Several requests in one TCP write: answered one by one, in order."""
    reader, writer = await asyncio.open_connection(*server.address(0))
    try:
        data = b"".join(encode_request(18, 0, corr, "p", ApiVersionsRequest()) for corr in range(1, 21))
        writer.write(data)
        await writer.drain()
        seen = []
        for _ in range(20):
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
            body = await asyncio.wait_for(reader.readexactly(size), TIMEOUT)
            seen.append(struct.unpack(">i", body[:4])[0])
        assert seen == list(range(1, 21))
    finally:
        writer.close()

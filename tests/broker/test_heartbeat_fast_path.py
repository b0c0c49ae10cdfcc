"""The heartbeat fast paths of the request path change no byte and no rule (issue 14 item 7): memoised Heartbeat
bodies and responses (broker/server.py ``_Codecs``), answers written at the end of a loop turn
(``SocketServer.flush``, while turns bring several requests), the loop timer re-armed lazily
(``KGroupServer._rearm_timer``).

Expected frames come from ``protocol.frames.encode_response`` (the codec, not the memo); expected errors from
Kafka's ``classicGroupHeartbeat`` (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and its session expiry."""

from __future__ import annotations

import asyncio
import struct

import pytest

from broker.server import KGroupServer
from protocol.errors import ErrorCode
from protocol.frames import encode_request, encode_response
from protocol.messages import ApiVersionsRequest, HeartbeatRequest, HeartbeatResponse
from broker_harness import TIMEOUT, form_group, make_settings, start_server

E = ErrorCode


async def _frames(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
        out.append(struct.pack(">i", size) + await asyncio.wait_for(reader.readexactly(size), TIMEOUT))
    return out


async def test_memoised_heartbeats_answer_the_codecs_bytes_for_every_version(server: KGroupServer) -> None:
    (m,) = await form_group(server, "hb-bytes", 1)
    reader, writer = await asyncio.open_connection(*server.address(m.coordinator))
    try:
        corr = 0
        for version in range(5):  # v0-v2: header v0; v3 adds group_instance_id; v4: flexible
            cases = [  # (request fields, Kafka's answer)
                (dict(generation_id=m.generation, member_id=m.member_id), E.NONE),
                (dict(generation_id=m.generation + 1, member_id=m.member_id), E.ILLEGAL_GENERATION),
                (dict(generation_id=m.generation, member_id="nobody"), E.UNKNOWN_MEMBER_ID),
            ]
            for fields, error in cases * 3:  # the same bytes again: answered from the memos
                corr += 1
                writer.write(encode_request(12, version, corr, "hb", HeartbeatRequest(group_id=m.group_id,
                                                                                       **fields)))
                (frame,) = await _frames(reader, 1)
                assert frame == encode_response(12, version, corr, HeartbeatResponse(error_code=int(error))), \
                    (version, fields)
    finally:
        writer.close()
        await m.close()


@pytest.mark.parametrize("batching", [False, True])
async def test_pipelined_heartbeats_of_two_members_in_one_write(server: KGroupServer, batching: bool) -> None:
    a, b = await form_group(server, "hb-pipe", 2)
    server.network.batching = batching  # answers written at once, or at the end of the loop's turn
    assert a.coordinator == b.coordinator
    reader, writer = await asyncio.open_connection(*server.address(a.coordinator))
    try:
        reqs = []
        for corr in range(1, 31):
            who = (a, b, None)[corr % 3]
            reqs.append(encode_request(12, 4, corr, "hb", HeartbeatRequest(
                group_id=a.group_id, generation_id=a.generation, member_id=who.member_id if who else "gone")))
        writer.write(b"".join(reqs))
        frames = await _frames(reader, 30)
        for corr, frame in enumerate(frames, 1):
            error = E.UNKNOWN_MEMBER_ID if corr % 3 == 2 else E.NONE
            assert frame == encode_response(12, 4, corr, HeartbeatResponse(error_code=int(error))), corr
    finally:
        writer.close()
        await a.close()
        await b.close()


@pytest.mark.parametrize("batching", [False, True])
async def test_an_answer_decided_before_a_bad_frame_is_still_written(server: KGroupServer, batching: bool) -> None:
    """A good request and a bad frame in one write: the answer is written (at once, or by its turn's flush)
    before the connection is closed for the bad frame, as Kafka's Processor sends a response before reading on."""
    server.network.batching = batching
    reader, writer = await asyncio.open_connection(*server.address(0))
    try:
        good = encode_request(18, 0, 5, "p", ApiVersionsRequest())
        writer.write(good + struct.pack(">i", -1))
        (frame,) = await _frames(reader, 1)
        assert struct.unpack(">i", frame[4:8])[0] == 5
        assert await asyncio.wait_for(reader.read(65536), TIMEOUT) == b""  # then closed
    finally:
        writer.close()


async def test_session_expiry_with_a_lazily_re_armed_timer() -> None:
    """Member a heartbeats every 100 ms (each heartbeat moves the earliest deadline later, which re-arms nothing);
    b stops: b's session (600 ms) expires -- the armed timer fires early, finds nothing due, re-arms at b's real
    deadline -- and the group rebalances without b, while a's session never expires."""
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=300))
    try:
        a, b = await form_group(srv, "hb-expire", 2, session_timeout_ms=600)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        errors = []
        while loop.time() - t0 < 3.0:
            errors.append(await a.heartbeat())
            if errors[-1] == E.REBALANCE_IN_PROGRESS:
                break
            await asyncio.sleep(0.1)
        # b's session expired 600 ms after its last heartbeat (at the sync): then a is told to rejoin
        assert errors[-1] == E.REBALANCE_IN_PROGRESS, errors
        assert 0.4 < loop.time() - t0 < 2.5
        r = await a.join()
        assert r.error_code == E.NONE and [x.member_id for x in r.members] == [a.member_id], r
        await a.close()
        await b.close()
    finally:
        await srv.close()


async def test_batching_turns_on_with_concurrent_connections_and_off_without(server: KGroupServer) -> None:
    """SocketServer.written probes how many answers a turn of the loop brings: 20 connections sending at once
    turn batching on; one connection sending one request at a time turns it off again (and every answer is right
    throughout)."""
    net = server.network
    assert not net.batching
    members = await form_group(server, "hb-batch", 1)
    (m,) = members
    conns = [await asyncio.open_connection(*server.address(m.coordinator)) for _ in range(20)]
    req = HeartbeatRequest(group_id=m.group_id, generation_id=m.generation, member_id=m.member_id)
    want = {corr: encode_response(12, 4, corr, HeartbeatResponse(error_code=0)) for corr in range(1, 11)}
    try:
        for corr in range(1, 11):  # 20 requests per round, all written before any answer is read
            for _, w in conns:
                w.write(encode_request(12, 4, corr, "hb", req))
            for r, _ in conns:
                assert (await _frames(r, 1))[0] == want[corr]
        assert net.batching
        _, w0 = conns[0]
        r0, _ = conns[0]
        for corr in range(1, 31):  # one at a time
            w0.write(encode_request(12, 4, corr, "hb", req))
            assert (await _frames(r0, 1))[0] == encode_response(12, 4, corr, HeartbeatResponse(error_code=0))
        assert not net.batching
    finally:
        for _, w in conns:
            w.close()
        await m.close()

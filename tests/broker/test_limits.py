"""Bounded resources (broker/network.py, docs/server.md "Resource limits"): idle connections closed
(connections.max.idle.ms), max.connections, a client that never reads its responses, partial frames bounded by
queued.max.request.bytes, a slow sender timed out, a parked request released when its client closes, running out
of file descriptors, rate-limited bad-input warnings, the non-loopback warning. Every wait is bounded."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import resource
import struct
import sys
import time

import pytest

from broker.network import RateLimitedLog
from broker.server import KGroupServer
from client.wire import WireClient
from protocol.frames import encode_request
from protocol.messages import ApiVersionsRequest, JoinGroupRequest
from broker_harness import TIMEOUT, Member, connect, healthy, make_settings, start_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
API_VERSIONS = encode_request(18, 0, 1, "limits", ApiVersionsRequest())


def settings(**kw):
    return dataclasses.replace(make_settings(brokers=1, group_initial_rebalance_delay_ms=5000,
                                             offsets_topic_replication_factor=1), **kw)


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> float:
    """Seconds until the server closed the connection (EOF or reset); fails after ``seconds``."""
    t0 = time.monotonic()
    try:
        data = await asyncio.wait_for(reader.read(1 << 16), seconds)
        assert data == b"", data
    except ConnectionResetError:
        pass
    return time.monotonic() - t0


async def answered(host: str, port: int, timeout: float) -> bool:
    """A new connection gets its ApiVersions answer within ``timeout``."""
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        w.write(API_VERSIONS)
        size = struct.unpack(">i", await asyncio.wait_for(r.readexactly(4), timeout))[0]
        await asyncio.wait_for(r.readexactly(size), timeout)
        return True
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        return False
    finally:
        w.transport.abort()


async def wait_until(pred, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- connections.max.idle.ms ----------------------------------------------------------------------------------

async def test_idle_connection_is_closed_busy_and_active_ones_are_not() -> None:
    srv = await start_server(settings(connections_max_idle_ms=300))
    try:
        idle_r, idle_w = await asyncio.open_connection(*srv.address(0))
        idle_closed = asyncio.ensure_future(closed_within(idle_r, TIMEOUT))
        active = await connect(srv)
        parked = Member(srv, "idle-g", "idle-c0", session_timeout_ms=10000, rebalance_timeout_ms=10000)
        await parked.find_coordinator()
        assert (await parked.join_once()).error_code == 79  # MEMBER_ID_REQUIRED
        join = parked.send_join()  # parked for the 5 s initial rebalance delay: the server owes it an answer
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.2:  # the active client talks every 100 ms
            await active.negotiate(timeout=TIMEOUT)
            await asyncio.sleep(0.1)
        assert idle_closed.done()
        assert 0.25 < await idle_closed < 1.0  # about connections.max.idle.ms after its last activity
        assert srv.network.closed_idle == 1  # only the idle one
        await active.negotiate(timeout=TIMEOUT)  # still served
        assert not join.done()  # still parked, not closed
        await active.close()
        await parked.close()
        with pytest.raises(Exception):
            await join
        idle_w.close()
    finally:
        await srv.close()


# --- max.connections --------------------------------------------------------------------------------------------

async def test_max_connections_new_ones_wait_then_the_longest_idle_is_closed() -> None:
    srv = await start_server(settings(max_connections=3))
    try:
        host, port = srv.address(0)
        clients = [await connect(srv) for _ in range(3)]
        for c in clients:
            await c.negotiate(timeout=TIMEOUT)
        # all three were active less than a second ago: the fourth waits in the backlog
        assert not await answered(host, port, 0.3)
        assert len(srv.network.connections(0)) <= 3
        for c in clients[1:]:  # keep two of them busy; the first one goes idle
            await c.negotiate(timeout=TIMEOUT)
        await asyncio.sleep(1.1)
        for c in clients[1:]:
            await c.negotiate(timeout=TIMEOUT)
        assert await answered(host, port, 3.0)  # admitted by closing the connection idle the longest
        assert srv.network.evicted >= 1
        with pytest.raises(Exception):
            await clients[0].negotiate(timeout=1.0)
        for c in clients[1:]:
            await c.negotiate(timeout=TIMEOUT)  # the active ones were kept
            await c.close()
        await clients[0].close()
    finally:
        await srv.close()


# --- a client that never reads its responses ----------------------------------------------------------------

async def test_client_that_never_reads_cannot_grow_server_memory() -> None:
    srv = await start_server(settings())
    try:
        sock_r, sock_w = await asyncio.open_connection(*srv.address(0), limit=1 << 16)
        sock_w.transport.pause_reading()  # never read a response
        batch = API_VERSIONS * 2000
        sent = 0
        for _ in range(200):  # up to 400,000 pipelined requests (~11 MB), written as fast as the server takes them
            sock_w.write(batch)
            sent += len(batch)
            try:
                await asyncio.wait_for(sock_w.drain(), 0.2)
            except asyncio.TimeoutError:
                break  # the server stopped reading: TCP flow control pushes back
        conn = srv.network.connections(0)[0]
        await wait_until(lambda: conn.paused)
        assert conn.send_blocked  # muted: a response is not completely sent
        assert len(conn.buf) <= srv.settings.connection_buffer_bytes + (256 << 10)  # the cap plus one read
        assert conn.transport.get_write_buffer_size() < 1 << 20  # at most one response queued
        assert sent > 4 << 20  # more than that was offered
        # other clients are unaffected
        await healthy(srv)
        sock_w.transport.abort()
    finally:
        await srv.close()


# --- partial frames: socket.request.max.bytes and queued.max.request.bytes -------------------------------------

async def test_partial_frames_share_a_bounded_pool() -> None:
    srv = await start_server(settings(max_request_bytes=6000, queued_max_request_bytes=10010))
    try:
        host, port = srv.address(0)
        frame = encode_request(18, 0, 5, "big", ApiVersionsRequest())
        body = frame[4:] + b"\x00" * (5000 - len(frame) + 4)  # a 5000-byte frame (trailing bytes are ignored)
        whole = struct.pack(">i", len(body)) + body
        writers = []
        for _ in range(3):  # three partial 5 KB frames: two fit in the pool, the third waits
            r, w = await asyncio.open_connection(host, port)
            w.write(whole[:100])
            await w.drain()
            writers.append((r, w))
        await wait_until(lambda: sum(c.mem_wait for c in srv.network.connections(0)) == 1)
        assert srv.network.pool.used == 2 * 5004
        for r, w in writers:  # complete them all: the waiting one is granted memory when the others finish
            w.write(whole[100:])
            await w.drain()
        for r, w in writers:
            size = struct.unpack(">i", await asyncio.wait_for(r.readexactly(4), TIMEOUT))[0]
            await asyncio.wait_for(r.readexactly(size), TIMEOUT)
            w.close()
        await wait_until(lambda: srv.network.pool.used == 0)
    finally:
        await srv.close()


async def test_slow_sender_is_timed_out(caplog) -> None:
    srv = await start_server(settings(request_read_timeout_ms=400))
    try:
        r, w = await asyncio.open_connection(*srv.address(0))
        with caplog.at_level(logging.WARNING, logger="kgroup.server"):
            t0 = time.monotonic()
            for b in API_VERSIONS[:-1]:  # one byte every 100 ms: never a whole frame in time
                if r.at_eof() or w.is_closing():
                    break
                try:
                    w.write(bytes([b]))
                    await w.drain()
                except ConnectionError:
                    break
                if time.monotonic() - t0 > 3:
                    break
                await asyncio.sleep(0.1)
            await closed_within(r, TIMEOUT)
        assert time.monotonic() - t0 < 2.0
        assert srv.network.closed_slow == 1
        assert any("slow sender" not in m and "request not complete" in m for m in caplog.messages)
        await healthy(srv)
    finally:
        await srv.close()


# --- a parked request released when its client closes -----------------------------------------------------------

async def test_parked_requests_release_their_sockets_when_clients_close() -> None:
    srv = await start_server(settings())
    try:
        m = Member(srv, "parked-g", "parked-c0")
        coordinator = (await m.find_coordinator())[0]
        await m.close()
        host, port = srv.address(coordinator)
        before = open_fds()
        clients = await asyncio.gather(*(WireClient.connect(host, port, timeout=TIMEOUT) for _ in range(200)))
        join = JoinGroupRequest(group_id="parked-g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                member_id="", protocol_type="consumer",
                                protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")])
        firsts = await asyncio.gather(*(c.call(join, 4, timeout=TIMEOUT) for c in clients))
        assert {r.error_code for r in firsts} == {79}
        futs = []
        for c, r in zip(clients, firsts):
            join.member_id = r.member_id
            futs.append(c.send(join, 4))  # parked: the initial rebalance delay is 5 s
        await wait_until(lambda: len(srv._pending) == 200)
        for c in clients:
            c.writer.transport.abort()
        for f in futs:
            f.cancel()
        # the server notices at once: every socket and every parked entry is released, long before the 5 s delay
        await wait_until(lambda: not srv.network.connections(coordinator) and not srv._pending, 2.0)
        await asyncio.sleep(0.05)
        assert open_fds() <= before + 5
    finally:
        await srv.close()


# --- rate-limited warnings --------------------------------------------------------------------------------------

async def test_bad_input_warnings_are_rate_limited(caplog) -> None:
    srv = await start_server(settings(log_interval_ms=500))
    try:
        host, port = srv.address(0)
        with caplog.at_level(logging.WARNING, logger="kgroup.server"):
            for _ in range(50):
                r, w = await asyncio.open_connection(host, port)
                w.write(struct.pack(">i", -1))
                await closed_within(r, TIMEOUT)
                w.close()
            lines = [m for m in caplog.messages if "invalid receive" in m]
            assert len(lines) == 1
            await asyncio.sleep(1.2)  # the window is over: one line with the count of the others
        summary = [m for m in caplog.messages if "more like the last 'invalid size' message" in m]
        assert len(summary) == 1 and summary[0].startswith("49 more"), caplog.messages
    finally:
        await srv.close()


def test_rate_limited_log_counts_per_kind() -> None:
    now = [0.0]
    records = []

    class Capture(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("kgroup.test.ratelimit")
    logger.addHandler(Capture())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    rl = RateLimitedLog(logger, 10.0, clock=lambda: now[0])
    for i in range(5):
        rl.warning("a", "a %d", i)
        rl.warning("b", "b %d", i)
    assert records == ["a 0", "b 0"]
    now[0] = 5.0
    rl.flush()  # the window is not over
    assert len(records) == 2
    now[0] = 10.0
    rl.flush()
    assert records[2:] == ["4 more like the last 'a' message in the last 10 s (logged once per 10 s)",
                           "4 more like the last 'b' message in the last 10 s (logged once per 10 s)"]
    rl.warning("a", "a again")
    assert records[-1] == "a again"


# --- binding --------------------------------------------------------------------------------------------------

async def test_a_non_loopback_bind_says_so(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="kgroup.server"):
        srv = await start_server(settings(host="0.0.0.0"))
        await srv.close()
    assert any("not a loopback address" in m for m in caplog.messages)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kgroup.server"):
        srv = await start_server(settings())
        assert srv.loopback_only
        await srv.close()
    assert not any("loopback" in m for m in caplog.messages)


# --- running out of file descriptors ----------------------------------------------------------------------------

async def test_out_of_file_descriptors_new_clients_are_served_and_the_log_stays_quiet(tmp_path) -> None:
    """``kgroup serve`` under RLIMIT_NOFILE 1024 with 1,100 idle connections: a new client is still served within a
    few seconds (the connection idle the longest makes room), and the log holds a handful of lines, no
    traceback."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kgroup", "serve", "--port", "0", "--brokers", "1", "--log-level", "INFO",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=ROOT, preexec_fn=limit)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 15)).decode()
        assert line.startswith("kgroup serving bootstrap="), line
        host, port = line.strip().split("=", 1)[1].rsplit(":", 1)
        idle = []
        for _ in range(1100):
            idle.append(await asyncio.wait_for(asyncio.open_connection(host, int(port)), TIMEOUT))
        t0 = time.monotonic()
        served = False
        while time.monotonic() - t0 < 8 and not served:
            served = await answered(host, int(port), 2.0)
        assert served, "a new client was starved"
        for _, w in idle:
            w.transport.abort()
        assert await answered(host, int(port), 2.0)
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), TIMEOUT)
    err = (await proc.stderr.read()).decode()
    assert "Traceback" not in err, err[-3000:]
    assert len(err.splitlines()) < 40, err[-3000:]

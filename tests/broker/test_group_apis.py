"""The group APIs over real TCP with scripted members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch through broker/apis.py to the coordinator service): the four phases, rebalances on leave and session
timeout, an abandoned JoinGroup, coordinator failover."""

from __future__ import annotations

import asyncio

import pytest

from broker.server import KGroupServer
from client.wire import ConnectionClosed, WireClient
from protocol.consumer_protocol import decode_subscription
from protocol.errors import ErrorCode
from broker_harness import TIMEOUT, Member, fetch_offsets, form_group, healthy, round_robin

E = ErrorCode


async def _heartbeat_until(member: Member, error: int, every_s: float = 0.05, limit_s: float = TIMEOUT) -> float:
    """Heartbeat every ``every_s`` until the answer is ``error``; returns how long it took."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    while loop.time() - t0 < limit_s:
        if await member.heartbeat() == error:
            return loop.time() - t0
        await asyncio.sleep(every_s)
    raise AssertionError(f"{member.name}: no heartbeat answer {error} within {limit_s}s")


async def test_four_phase_walk_three_members(server: KGroupServer) -> None:
    group = "walk"
    coord = server.svc.coordinator_of(group)
    members = [Member(server, group, f"consumer-{i}") for i in range(3)]
    # Phase 1: FIND_COORDINATOR via a broker that is (for one of them) not the coordinator
    for i, m in enumerate(members):
        node, host, port = await m.find_coordinator(via_broker=i % 3, version=3 if i else 4)
        assert (node, host, port) == (coord, "127.0.0.1", server.ports[coord])
    # Phase 2a: JOIN_GROUP with an empty member id -> MEMBER_ID_REQUIRED + the id to use (KIP-394)
    first = await asyncio.gather(*(m.join_once() for m in members))
    assert [r.error_code for r in first] == [E.MEMBER_ID_REQUIRED] * 3
    assert all(r.member_id.startswith(f"consumer-{i}-") for i, r in enumerate(first))
    assert len({r.member_id for r in first}) == 3
    # Phase 2b: JOIN_GROUP with the id: parked until the (initial) join phase completes, then all answered
    joins = await asyncio.gather(*(m.join_once() for m in members))
    assert [r.error_code for r in joins] == [E.NONE] * 3
    assert {r.generation_id for r in joins} == {1}
    assert {r.protocol_name for r in joins} == {"range"}  # everyone's first choice wins the vote
    leaders = {r.leader for r in joins}
    assert len(leaders) == 1
    leader = next(m for m in members if m.is_leader)
    assert sorted(x.member_id for x in leader.last_join.members) == sorted(m.member_id for m in members)
    for x in leader.last_join.members:
        assert decode_subscription(x.metadata)[1].topics == ["orders"]
    assert all(m.last_join.members == [] for m in members if m is not leader)
    # Phase 3: SYNC_GROUP: followers park until the leader's assignment arrives
    followers = [m for m in members if m is not leader]
    parked = [asyncio.ensure_future(m.sync()) for m in followers]
    await asyncio.sleep(0.05)
    assert not any(p.done() for p in parked)
    plan = round_robin([m.member_id for m in members], "orders", 6)
    lr = await leader.sync(plan)
    syncs = [lr] + list(await asyncio.wait_for(asyncio.gather(*parked), TIMEOUT))
    assert [s.error_code for s in syncs] == [E.NONE] * 3
    got = sorted(p for m in members for _, ps in m.assignment.assigned_partitions for p in ps)
    assert got == list(range(6))
    # Phase 4: HEARTBEAT
    assert [await m.heartbeat() for m in members] == [E.NONE] * 3
    state = server.svc.group(group)
    assert state.state.name.upper() in ("STABLE",) and state.generation_id == 1
    for m in members:
        await m.close()


async def test_clean_leave_triggers_rebalance(server: KGroupServer) -> None:
    a, b = await form_group(server, "leavers", 2)
    gen = a.generation
    r = await b.leave()
    assert r.error_code == E.NONE and [x.error_code for x in r.members] == [E.NONE]
    await _heartbeat_until(a, E.REBALANCE_IN_PROGRESS)
    r = await a.join()
    assert r.error_code == E.NONE and r.generation_id == gen + 1 and r.leader == a.member_id
    assert [x.member_id for x in r.members] == [a.member_id]
    s = await a.sync(round_robin([a.member_id], "orders", 6))
    assert s.error_code == E.NONE
    assert a.assignment.assigned_partitions == [("orders", list(range(6)))]
    await a.close()
    await b.close()


async def test_silent_member_is_removed_by_session_timeout(server: KGroupServer) -> None:
    a, b = await form_group(server, "sleepy", 2, session_timeout_ms=300)
    gen = a.generation
    # b stops heartbeating (its connection stays open: only the session timeout can notice)
    took = await _heartbeat_until(a, E.REBALANCE_IN_PROGRESS, every_s=0.05)
    assert 0.15 <= took <= 2.0
    r = await a.join()
    assert r.error_code == E.NONE and r.generation_id == gen + 1
    assert [x.member_id for x in r.members] == [a.member_id]
    assert await b.heartbeat() == E.UNKNOWN_MEMBER_ID
    await a.close()
    await b.close()


async def test_replaced_parked_join_is_abandoned_and_its_connection_closed(server: KGroupServer) -> None:
    """A JoinGroup replaced by a newer one from the same member is never answered by Kafka; the server closes
    that connection (a client would time out)."""
    a, b = await form_group(server, "replaced", 2)
    first = a.send_join()  # a rejoins: parked until b rejoins too
    await asyncio.sleep(0.05)
    assert not first.done()
    old_conn = a.conn
    a.conn = await WireClient.connect(*server.address(a.coordinator), client_id="again")
    second = a.send_join()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(first, TIMEOUT)
    await old_conn.wait_closed(TIMEOUT)
    assert not second.done()
    await b.join()
    r = await asyncio.wait_for(second, TIMEOUT)
    assert r.error_code == E.NONE
    await a.close()
    await b.close()
    await old_conn.close()
    await healthy(server)


async def test_coordinator_failover_keeps_committed_offsets(server: KGroupServer) -> None:
    group = "failover"
    members = await form_group(server, group, 2)
    a = next(m for m in members if m.is_leader)
    r = await a.commit({0: 10, 1: 11, 2: 12})
    assert [p.error_code for t in r.topics for p in t.partitions] == [0, 0, 0]
    old = a.coordinator
    old_conns = [m.conn for m in members]
    await server.stop_broker(old)
    for c in old_conns:  # its connections drop
        await c.wait_closed(TIMEOUT)
    with pytest.raises(OSError):  # its listener is gone
        await WireClient.connect(*server.address(old), timeout=TIMEOUT)
    via = next(b for b in range(3) if b != old)
    node, _, port = await a.find_coordinator(via_broker=via)
    assert node != old and node == server.svc.coordinator_of(group) and port == server.ports[node]
    err, offsets = await fetch_offsets(a.conn, group, "orders", [0, 1, 2, 3])
    assert err == 0 and offsets == {0: 10, 1: 11, 2: 12, 3: -1}
    # the group itself was loaded by the new coordinator from the log: the members carry on
    assert await a.heartbeat() == E.NONE
    # the old broker comes back on its port and serves again (as a follower)
    await server.start_broker(old)
    await healthy(server, old)
    for m in members:
        await m.close()

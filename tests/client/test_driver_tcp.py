"""Real consumer cores (consumer/coordinator.py) driven over TCP by client/driver.py against `kgroup serve`.

Each test runs an embedded 3-broker server on loopback (ephemeral ports unless a restart needs fixed ones) with
short timeouts (group.min.session.timeout.ms lowered), and simulated consumer applications. Every wait is bounded.
Expected values come from Kafka's rules: the coordinator is the leader of __consumer_offsets partition
Utils.abs(groupId.hashCode()) % 50 (computed here independently), the range assignor splits 6 partitions of one
topic over the members sorted by member id, a clean LeaveGroup rebalances at once, a silent member is removed by
its session timeout.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from consumer.assignors import TopicPartition
from client.driver import AsyncConsumer, parse_bootstrap
from broker.server import KGroupServer
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from broker_harness import TIMEOUT, connect, fetch_offsets, make_settings, start_server

E = ErrorCode
WAIT = 10.0  # bound of every wait on consumers
TOPIC = "orders"
ALL = {TopicPartition(TOPIC, p) for p in range(6)}


def java_hash(s: str) -> int:
    """String.hashCode (UTF-16 code units, int overflow)."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def expected_coordinator(server: KGroupServer, group: str) -> int:
    h = java_hash(group)
    partition = (0 if h == -(1 << 31) else abs(h)) % 50  # Utils.abs, offsets.topic.num.partitions = 50
    return server.cluster.partition("__consumer_offsets", partition).leader


class Wire:
    """Every request/response a consumer put on / took off the wire: (direction, node, kind, api_key, error)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, str, int, int | None]] = []

    def __call__(self, direction: str, node: int, kind: str, api_key: int, version: int, body: Any) -> None:
        err = getattr(body, "error_code", None)
        if api_key == ApiKey.FIND_COORDINATOR and getattr(body, "coordinators", None):
            err = body.coordinators[0].error_code
        self.log.append((direction, node, kind, int(api_key), err))

    def count(self, direction: str, api_key: int, error: int | None = None) -> int:
        return sum(1 for d, _, _, k, e in self.log if d == direction and k == api_key and (error is None or e == error))


def consumer(server: KGroupServer, group: str, name: str, **config: Any) -> AsyncConsumer:
    cfg = {"group.id": group, "client.id": name, "session.timeout.ms": 1500, "heartbeat.interval.ms": 150,
           "auto.commit.interval.ms": 300, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
           "partition.assignment.strategy": "range", "metadata.max.age.ms": 1000}
    cfg.update(config)
    return AsyncConsumer(server.bootstrap, cfg, name=name, processing_ms=5, on_wire=Wire())


async def start_all(consumers: list[AsyncConsumer]) -> None:
    """Start together, so that every first JoinGroup lands within the initial rebalance delay (200 ms)."""
    await asyncio.wait_for(asyncio.gather(*(c.start([TOPIC]) for c in consumers)), WAIT)


async def all_stable(consumers: list[AsyncConsumer], *, generation: int | None = None,
                     members: int | None = None) -> None:
    def ok(c: AsyncConsumer) -> bool:
        return c.stable and (generation is None or c.generation >= generation) and (
            members is None or len(c.assignment) in _share(members))
    try:
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(ok, WAIT) for c in consumers)), WAIT)
    except asyncio.TimeoutError:
        raise AssertionError("not stable in time:\n" + "\n".join(c.describe() for c in consumers)) from None
    gens = {c.generation for c in consumers}
    assert len(gens) == 1, gens


def _share(members: int) -> set[int]:
    return {6 // members, -(-6 // members)}


def assert_partitioned(consumers: list[AsyncConsumer]) -> None:
    owned = [set(c.assignment) for c in consumers]
    assert set().union(*owned) == ALL
    assert sum(len(o) for o in owned) == 6  # disjoint


def range_plan(member_ids: list[str]) -> dict[str, set[TopicPartition]]:
    """RangeAssignor for one topic of 6 partitions: members sorted by id, the first 6 % n get one more."""
    ms = sorted(member_ids)
    n = len(ms)
    plan, start = {}, 0
    for i, m in enumerate(ms):
        k = 6 // n + (1 if i < 6 % n else 0)
        plan[m] = {TopicPartition(TOPIC, p) for p in range(start, start + k)}
        start += k
    return plan


async def shutdown(*consumers: AsyncConsumer) -> None:
    for c in consumers:
        await asyncio.wait_for(c.kill(), TIMEOUT)


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap([("h", 9)]) == [("h", 9)]
    with pytest.raises(ValueError):
        parse_bootstrap("nohost")


async def test_java_hash_oracle() -> None:
    assert java_hash("polygenelubricants") == -(1 << 31) and java_hash("a") == 97


async def test_four_phase_walk_three_consumers(server: KGroupServer) -> None:
    group = "walk"
    cs = [consumer(server, group, f"c{i}") for i in range(3)]
    events: list[str] = []
    assigned_async: list = []

    async def on_assigned(tps) -> None:  # coroutine callbacks are awaited by the driver's dispatcher task
        await asyncio.sleep(0)
        assigned_async.append(tuple(tps))

    cs[1].on_assigned = on_assigned
    cs[1].on_event = lambda o: events.append(type(o).__name__)  # plain callables are called inline, in order
    await start_all(cs)
    await all_stable(cs, members=3)
    coord = expected_coordinator(server, group)
    for c in cs:
        wire: Wire = c.on_wire
        # FIND_COORDINATOR on an ordinary connection, answered with the leader of the group's offsets partition
        assert wire.count("recv", ApiKey.FIND_COORDINATOR, 0) >= 1
        assert c.coordinator is not None and c.coordinator.node_id == coord
        assert c.coordinator.port == server.ports[coord]
        # JOIN_GROUP: MEMBER_ID_REQUIRED (KIP-394), then joined; SYNC_GROUP; HEARTBEAT on the coordinator
        assert wire.count("recv", ApiKey.JOIN_GROUP, E.MEMBER_ID_REQUIRED) == 1
        assert wire.count("recv", ApiKey.JOIN_GROUP, 0) == 1
        assert wire.count("recv", ApiKey.SYNC_GROUP, 0) == 1
        assert all(node == coord and kind == "coord" for d, node, kind, k, _ in wire.log
                   if k in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT))
    assert {c.generation for c in cs} == {1}
    assert_partitioned(cs)
    await cs[1].wait_until(lambda c: bool(assigned_async), WAIT)
    assert set(assigned_async[0]) == set(cs[1].assignment)
    seq = [e for e in events if e in ("CoordinatorDiscovered", "GroupJoined", "PartitionsRevoked",
                                      "PartitionsAssigned", "PositionsInitialized")]
    # Kafka's order: coordinator, join, onPartitionsAssigned, then the positions of the new partitions
    # (OffsetFetch). No onPartitionsRevoked before the first join: onJoinPrepare with no generation yet takes the
    # "lost" branch, and calls nothing when nothing is owned.
    assert seq == ["CoordinatorDiscovered", "GroupJoined", "PartitionsAssigned", "PositionsInitialized"], seq
    assert {c.member_id: set(c.assignment) for c in cs} == range_plan([c.member_id for c in cs])
    leaders = [c for c in cs if c.core.is_leader]
    assert len(leaders) == 1
    group_state = server.svc.group(group)
    assert group_state.state.name.lower() == "stable" and group_state.generation_id == 1
    assert group_state.leader_id == leaders[0].member_id and group_state.protocol_name == "range"
    assert set(group_state.members) == {c.member_id for c in cs}
    # heartbeats flow (interval 150 ms) and are answered NONE while the group is stable
    await asyncio.wait_for(asyncio.gather(*(c.wait_until(lambda c: c.on_wire.count("recv", ApiKey.HEARTBEAT, 0) >= 3,
                                                         WAIT) for c in cs)), WAIT)
    assert {c.generation for c in cs} == {1}
    await shutdown(*cs)


async def test_clean_leave_rebalances_without_waiting_for_the_session_timeout(server: KGroupServer) -> None:
    group = "leave"
    revoked: list = []
    cs = [consumer(server, group, f"c{i}", **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
          for i in range(3)]
    cs[0].on_revoked = revoked.append
    await start_all(cs)
    await all_stable(cs, members=3)
    owned = set(cs[0].assignment)
    gen = cs[0].generation
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.wait_for(cs[0].close(), WAIT)
    assert cs[0].on_wire.count("recv", ApiKey.LEAVE_GROUP, 0) == 1, (cs[0].describe(), cs[0].on_wire.log[-10:])
    assert revoked and set(revoked[-1]) == owned  # onPartitionsRevoked before leaving
    rest = cs[1:]
    await all_stable(rest, generation=gen + 1, members=2)
    took = loop.time() - t0
    assert took < 3.0, took  # far below the 6 s session timeout: the LeaveGroup triggered the rebalance
    assert_partitioned(rest)
    assert {c.member_id: set(c.assignment) for c in rest} == range_plan([c.member_id for c in rest])
    assert set(server.svc.group(group).members) == {c.member_id for c in rest}
    await shutdown(*rest)


async def test_killed_consumer_is_removed_by_the_session_timeout(server: KGroupServer) -> None:
    group = "kill"
    removed: list[str] = []
    server.add_listener(lambda o: removed.extend(
        e.record.reason for e in o.records if e.record.TYPE == "MemberRemoved" and e.record.group_id == group))
    cs = [consumer(server, group, f"c{i}", **{"session.timeout.ms": 1000, "heartbeat.interval.ms": 100})
          for i in range(3)]
    await start_all(cs)
    await all_stable(cs, members=3)
    victim = cs[2]
    gen = cs[0].generation
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await victim.kill()
    assert victim.on_wire.count("send", ApiKey.LEAVE_GROUP) == 0
    rest = cs[:2]
    await all_stable(rest, generation=gen + 1, members=2)
    took = loop.time() - t0
    assert took >= 0.8, took  # not before the session timeout (1 s, minus the time since the last heartbeat)
    assert any("heartbeat expiration" in r for r in removed), removed
    assert set(server.svc.group(group).members) == {c.member_id for c in rest}
    assert_partitioned(rest)
    await shutdown(*rest)


async def _commit_all(consumers: list[AsyncConsumer]) -> dict[TopicPartition, int]:
    committed: dict[TopicPartition, int] = {}
    for c in consumers:
        committed.update(await c.commit(timeout=WAIT))
    assert set(committed) == ALL
    return committed


async def _rebalance_with_newcomer(server: KGroupServer, group: str, old: list[AsyncConsumer], name: str,
                                   committed: dict[TopicPartition, int]) -> AsyncConsumer:
    """A new member joins: every partition is (re)assigned and its position fetched with OffsetFetch."""
    for c in old:
        c.committed_seen.clear()
    gen = old[0].generation
    new = consumer(server, group, name, **{"enable.auto.commit": False, "auto.offset.reset": "latest"})
    new._log_end = {tp: 1_000_000 for tp in ALL}  # a lost offset would jump to the log end
    await new.start([TOPIC])
    everyone = old + [new]
    await all_stable(everyone, members=len(everyone))
    assert everyone[0].generation > gen
    seen: dict[TopicPartition, int] = {}
    for c in everyone:
        seen.update(c.committed_seen)
    assert seen == committed
    for c in everyone:
        for tp in c.assignment:
            assert committed[tp] <= c.positions[tp] < 1_000_000
    return new


async def test_coordinator_broker_stopped_clients_rediscover_and_keep_offsets(server: KGroupServer) -> None:
    group = "failover"
    cfg = {"enable.auto.commit": False, "auto.offset.reset": "earliest"}
    cs = [consumer(server, group, f"c{i}", **cfg) for i in range(2)]
    await start_all(cs)
    await all_stable(cs, members=2)
    await asyncio.sleep(0.2)  # the applications consume a little
    committed = await _commit_all(cs)
    assert all(o > 0 for o in committed.values())
    old_coord = expected_coordinator(server, group)
    assert {c.coordinator.node_id for c in cs} == {old_coord}
    await asyncio.wait_for(server.stop_broker(old_coord), TIMEOUT)
    new_coord = expected_coordinator(server, group)  # the next in-sync replica now leads the partition
    assert new_coord != old_coord
    await asyncio.wait_for(asyncio.gather(*(c.wait_until(
        lambda c: c.coordinator is not None and c.coordinator.node_id == new_coord and c.stable, WAIT)
        for c in cs)), WAIT)
    for c in cs:
        assert c.on_wire.count("recv", ApiKey.FIND_COORDINATOR, 0) >= 2  # rediscovered
    # the new coordinator serves the offsets committed before the failover
    conn = await connect(server, new_coord)
    try:
        err, offsets = await fetch_offsets(conn, group, TOPIC, list(range(6)))
    finally:
        await conn.close()
    assert err == 0 and offsets == {tp.partition: o for tp, o in committed.items()}
    new = await _rebalance_with_newcomer(server, group, cs, "c2", committed)
    await shutdown(*cs, new)


def _free_port_block(n: int) -> int:
    import socket
    for _ in range(50):
        base = random.randint(20000, 60000 - n)
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port block")


async def _start_on(settings, attempts: int = 5) -> KGroupServer:
    for i in range(attempts):
        try:
            return await start_server(settings)
        except OSError:
            if i == attempts - 1:
                raise
            await asyncio.sleep(0.2)
    raise AssertionError("unreachable")


async def test_restart_with_data_dir_keeps_groups_and_offsets(tmp_path) -> None:
    group = "restart"
    for attempt in range(5):  # the restart must find the same ports: pick a free block of 3
        base = _free_port_block(3)
        settings = make_settings(data_dir=str(tmp_path), group_initial_rebalance_delay_ms=200)
        settings.port = base
        try:
            srv = await start_server(settings)
            break
        except OSError:
            if attempt == 4:
                raise
    cs: list[AsyncConsumer] = []
    try:
        cfg = {"enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 3000,
               "heartbeat.interval.ms": 200}
        cs = [consumer(srv, group, f"c{i}", **cfg) for i in range(2)]
        await start_all(cs)
        await all_stable(cs, members=2)
        await asyncio.sleep(0.2)
        committed = await _commit_all(cs)
        members = {c.member_id for c in cs}
        gen = cs[0].generation
        await asyncio.wait_for(srv.close(), TIMEOUT)
        # the consumers lose the coordinator; the process comes back on the same ports with the same data dir
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(lambda c: c.coordinator is None, WAIT) for c in cs)),
                               WAIT)
        settings2 = make_settings(data_dir=str(tmp_path), group_initial_rebalance_delay_ms=200)
        settings2.port = base
        srv = await _start_on(settings2)
        g = srv.svc.group(group)
        assert g is not None and g.generation_id == gen and set(g.members) == members  # recovered from the log
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(lambda c: c.coordinator is not None and c.stable, WAIT)
                                                for c in cs)), WAIT)
        # the same members carry on in the same generation: their heartbeats are accepted by the restarted broker
        assert {c.member_id for c in cs} == members and {c.generation for c in cs} == {gen}
        hb_before = [c.on_wire.count("recv", ApiKey.HEARTBEAT, 0) for c in cs]
        await asyncio.wait_for(asyncio.gather(*(c.wait_until(
            lambda c, n=n: c.on_wire.count("recv", ApiKey.HEARTBEAT, 0) >= n + 2, WAIT)
            for c, n in zip(cs, hb_before))), WAIT)
        new = await _rebalance_with_newcomer(srv, group, cs, "c2", committed)
        cs.append(new)
    finally:
        await shutdown(*cs)
        await srv.close()


async def test_slow_processing_exceeds_max_poll_interval_and_the_member_leaves(server: KGroupServer) -> None:
    """processing_ms per poll > max.poll.interval.ms: the heartbeat task sends LeaveGroup (reason 'consumer poll
    timeout has expired.'), the group rebalances without it; its next poll finds its partitions lost, it rejoins."""
    group = "slow"
    lost: list = []
    cs = [consumer(server, group, f"c{i}", **{"max.poll.interval.ms": 600, "session.timeout.ms": 3000,
                                              "heartbeat.interval.ms": 100}) for i in range(2)]
    slow = cs[1]
    slow.on_lost = lost.append
    await start_all(cs)
    await all_stable(cs, members=2)
    owned = set(slow.assignment)
    gen = cs[0].generation
    slow.processing_ms = 1500  # the next batch takes longer than max.poll.interval.ms
    await cs[0].wait_until(lambda c: c.stable and c.generation > gen and set(c.assignment) == ALL, WAIT)
    assert slow.on_wire.count("recv", ApiKey.LEAVE_GROUP, 0) == 1
    slow.processing_ms = 5
    await all_stable(cs, generation=gen + 2, members=2)
    assert lost and set(lost[0]) == owned  # onPartitionsLost, not onPartitionsRevoked
    assert_partitioned(cs)
    await shutdown(*cs)


async def test_cooperative_sticky_rebalance_moves_only_the_leavers_partitions(server: KGroupServer) -> None:
    group = "coop"
    revoked: dict[str, list] = {}
    cs = [consumer(server, group, f"c{i}", **{"partition.assignment.strategy": "cooperative-sticky"})
          for i in range(3)]
    for c in cs:
        c.on_revoked = (lambda name: lambda tps: revoked.setdefault(name, []).append(tuple(tps)))(c.name)
    await start_all(cs)
    await all_stable(cs, members=3)
    before = {c.name: set(c.assignment) for c in cs}
    revoked.clear()
    await asyncio.wait_for(cs[2].close(), WAIT)
    rest = cs[:2]
    await all_stable(rest, members=2)
    for c in rest:
        assert before[c.name] <= set(c.assignment)  # KIP-429: the survivors keep what they had
        assert not any(revoked.get(c.name, []))
    assert_partitioned(rest)
    await shutdown(*rest)


async def test_start_fails_within_its_timeout_when_no_broker_answers() -> None:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = AsyncConsumer(f"127.0.0.1:{port}", {"group.id": "g"}, name="lonely")
    with pytest.raises(asyncio.TimeoutError):
        await c.start([TOPIC], timeout=0.5)
    assert not c._tasks and not c._conns

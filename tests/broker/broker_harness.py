"""Helpers for the tests of the broker over TCP (`kgroup serve`): an embedded server on ephemeral ports, scripted
group members, and data-path requests.

A scripted member is *not* a consumer: it sends exactly the requests a test tells it to, over its own connection
to the coordinator, so every phase of the protocol can be asserted on. Expected values come from Kafka's rules
(docs/coordinator.md), never from running kgroup.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest_asyncio

from coordinator.config import CoordinatorConfig
from broker.server import KGroupServer, ServerSettings
from client.wire import WireClient
from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription, decode_assignment,
                                        encode_assignment, encode_subscription)
from protocol.errors import ErrorCode
from protocol.messages import (FetchRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
                               LeaveGroupRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
                               ProduceRequest, SyncGroupRequest)
from protocol.records import Record, RecordBatch, encode_batch

E = ErrorCode
TIMEOUT = 5.0  # every wait in these tests is bounded

FAST = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 50}


def make_settings(*, brokers: int = 3, topics=(("orders", 6, 1),), data_dir: str | None = None,
                  max_request_bytes: int = 1 << 20, auto_create_topics: bool = False, **config: Any) -> ServerSettings:
    cfg = dict(FAST)
    cfg.update({k.replace("_", "."): v for k, v in config.items()})
    return ServerSettings(brokers=brokers, host="127.0.0.1", port=0, data_dir=data_dir,
                          max_request_bytes=max_request_bytes, topics=list(topics), seed=None,
                          auto_create_topics=auto_create_topics, config=CoordinatorConfig.create(cfg))


async def start_server(settings: ServerSettings) -> KGroupServer:
    """Start a server that also verifies its deadline cache against the core after every call."""
    srv = KGroupServer(settings)
    srv.check_deadlines = True
    return await srv.start()


@pytest_asyncio.fixture
async def server():
    """A 3-broker server on ephemeral loopback ports, initial rebalance delay 200 ms, min session timeout 50 ms
    (the ``server`` fixture of tests/broker and tests/client, through their conftest.py)."""
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=200))
    try:
        yield srv
    finally:
        await srv.close()


async def connect(server: KGroupServer, broker: int = 0, client_id: str = "test") -> WireClient:
    host, port = server.address(broker)
    return await WireClient.connect(host, port, client_id=client_id, timeout=TIMEOUT)


async def healthy(server: KGroupServer, broker: int = 0) -> None:
    """A fresh connection negotiates ApiVersions: the server is still up and serving."""
    assert server.running
    c = await connect(server, broker)
    try:
        versions = await c.negotiate(timeout=TIMEOUT)
        assert 18 in versions
    finally:
        await c.close()


def assignment_bytes(topic: str, partitions: list[int]) -> bytes:
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=[(topic, partitions)] if partitions else []))


def round_robin(member_ids: list[str], topic: str, num_partitions: int) -> dict[str, bytes]:
    ms = sorted(member_ids)
    out: dict[str, list[int]] = {m: [] for m in ms}
    for p in range(num_partitions):
        out[ms[p % len(ms)]].append(p)
    return {m: assignment_bytes(topic, ps) for m, ps in out.items()}


class Member:
    """One scripted group member with its own connection to the group's coordinator."""

    JOIN_V, SYNC_V, HB_V, LEAVE_V = 9, 5, 4, 5

    def __init__(self, server: KGroupServer, group_id: str, name: str, *, session_timeout_ms: int = 1000,
                 rebalance_timeout_ms: int = 2000, topic: str = "orders") -> None:
        self.server = server
        self.group_id = group_id
        self.name = name
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.topic = topic
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol_name: str | None = None
        self.conn: WireClient | None = None
        self.coordinator: int | None = None
        self.assignment: ConsumerProtocolAssignment | None = None
        self.last_join: Any = None

    async def find_coordinator(self, via_broker: int = 0, version: int = 4) -> Any:
        c = await connect(self.server, via_broker, self.name)
        try:
            if version >= 4:
                r = await c.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[self.group_id]), version,
                                 timeout=TIMEOUT)
                co = r.coordinators[0]
                assert co.error_code == 0, co
                node, host, port = co.node_id, co.host, co.port
            else:
                r = await c.call(FindCoordinatorRequest(key=self.group_id, key_type=0), version, timeout=TIMEOUT)
                assert r.error_code == 0, r
                node, host, port = r.node_id, r.host, r.port
        finally:
            await c.close()
        if self.conn is not None:
            await self.conn.close()
        self.coordinator = node
        self.conn = await WireClient.connect(host, port, client_id=self.name, timeout=TIMEOUT)
        return node, host, port

    def join_request(self) -> JoinGroupRequest:
        meta = encode_subscription(ConsumerProtocolSubscription(topics=[self.topic]))
        return JoinGroupRequest(group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
                                rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
                                group_instance_id=None, protocol_type="consumer",
                                protocols=[JoinGroupRequest.Protocol(name="range", metadata=meta),
                                           JoinGroupRequest.Protocol(name="roundrobin", metadata=meta)],
                                reason=None)

    def send_join(self) -> asyncio.Future:
        return self.conn.send(self.join_request(), self.JOIN_V)

    async def join_once(self, timeout: float = TIMEOUT) -> Any:
        fut = self.send_join()
        r = await asyncio.wait_for(fut, timeout)
        self._absorb_join(r)
        return r

    def _absorb_join(self, r: Any) -> None:
        self.last_join = r
        if r.error_code in (E.NONE, E.MEMBER_ID_REQUIRED):
            self.member_id = r.member_id
        if r.error_code == E.NONE:
            self.generation = r.generation_id
            self.leader = r.leader
            self.protocol_name = r.protocol_name

    async def join(self, timeout: float = TIMEOUT) -> Any:
        """JoinGroup; on MEMBER_ID_REQUIRED (KIP-394) join again with the id given."""
        r = await self.join_once(timeout)
        if r.error_code == E.MEMBER_ID_REQUIRED:
            r = await self.join_once(timeout)
        return r

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader == self.member_id

    async def sync(self, assignments: dict[str, bytes] | None = None, timeout: float = TIMEOUT) -> Any:
        req = SyncGroupRequest(group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
                               group_instance_id=None, protocol_type="consumer", protocol_name=self.protocol_name,
                               assignments=[SyncGroupRequest.Assignment(member_id=m, assignment=a)
                                            for m, a in (assignments or {}).items()])
        r = await self.conn.call(req, self.SYNC_V, timeout=timeout)
        if r.error_code == E.NONE:
            self.assignment = decode_assignment(r.assignment)[1] if r.assignment else None
        return r

    async def heartbeat(self, timeout: float = TIMEOUT) -> int:
        r = await self.conn.call(HeartbeatRequest(group_id=self.group_id, generation_id=self.generation,
                                                  member_id=self.member_id, group_instance_id=None),
                                 self.HB_V, timeout=timeout)
        return r.error_code

    async def leave(self, timeout: float = TIMEOUT) -> Any:
        return await self.conn.call(LeaveGroupRequest(group_id=self.group_id, members=[
            LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None, reason="test")]),
            self.LEAVE_V, timeout=timeout)

    async def commit(self, offsets: dict[int, int], version: int = 8) -> Any:
        T = OffsetCommitRequest.Topic
        r = await self.conn.call(OffsetCommitRequest(
            group_id=self.group_id, generation_id_or_member_epoch=self.generation, member_id=self.member_id,
            group_instance_id=None, topics=[T(name=self.topic, partitions=[
                T.Partition(partition_index=p, committed_offset=o, committed_metadata="m")
                for p, o in sorted(offsets.items())])]), version, timeout=TIMEOUT)
        return r

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


async def fetch_offsets(conn: WireClient, group_id: str, topic: str, partitions: list[int],
                        version: int = 7) -> tuple[int, dict[int, int]]:
    r = await conn.call(OffsetFetchRequest(group_id=group_id, topics=[
        OffsetFetchRequest.Topic(name=topic, partition_indexes=partitions)]), version, timeout=TIMEOUT)
    return r.error_code, {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}


async def form_group(server: KGroupServer, group_id: str, n: int, **kw: Any) -> list[Member]:
    """n members walk FindCoordinator -> JoinGroup (MEMBER_ID_REQUIRED) -> JoinGroup -> SyncGroup into one
    generation. Needs an initial rebalance delay long enough for all n first joins (the caller's settings)."""
    members = [Member(server, group_id, f"{group_id}-c{i}", **kw) for i in range(n)]
    for m in members:
        await m.find_coordinator()
    first = await asyncio.gather(*(m.join_once() for m in members))
    assert all(r.error_code == E.MEMBER_ID_REQUIRED for r in first), first
    joins = await asyncio.gather(*(m.join_once() for m in members))
    assert all(r.error_code == E.NONE for r in joins), joins
    gens = {r.generation_id for r in joins}
    assert len(gens) == 1, gens
    leader = next(m for m in members if m.is_leader)
    plan = round_robin([x.member_id for x in leader.last_join.members], "orders", 6)
    syncs = await asyncio.gather(*(m.sync(plan if m is leader else None) for m in members))
    assert all(s.error_code == E.NONE for s in syncs), syncs
    return members


# --- the data path --------------------------------------------------------------------------------------------

def batch(keys: list[str], *, pid: int = -1, epoch: int = -1, seq: int = -1, ts: int | None = None) -> bytes:
    now = int(time.time() * 1000) if ts is None else ts
    return encode_batch(RecordBatch(records=[Record(offset=i, timestamp=now + i, key=k.encode(),
                                                    value=b"v-" + k.encode()) for i, k in enumerate(keys)],
                                    producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def produce_req(topic: str, partition: int, records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.Topic(name=topic, partition_data=[ProduceRequest.Topic.Partition(index=partition,
                                                                                       records=records)])])


def fetch_req(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1,
              epoch: int = -1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[
                            FetchRequest.Topic(topic=topic, partitions=[FetchRequest.Topic.Partition(
                                partition=partition, current_leader_epoch=epoch, fetch_offset=offset,
                                log_start_offset=-1, partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")


def list_req(topic: str, partition: int, ts: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.Topic(
        name=topic, partitions=[ListOffsetsRequest.Topic.Partition(partition_index=partition, timestamp=ts)])])


async def leader_conn(server: KGroupServer, topic: str, partition: int):
    leader = server.cluster.partition(topic, partition).leader
    c = await connect(server, leader)
    await c.negotiate(timeout=TIMEOUT)
    return c


def part(resp):
    return (resp.responses[0].partition_responses[0] if hasattr(resp.responses[0], "partition_responses")
            else resp.responses[0].partitions[0])

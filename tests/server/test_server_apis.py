"""ApiVersions, Metadata and FindCoordinator over TCP (Kafka's KafkaApis / RequestContext behaviour)."""

from __future__ import annotations

import asyncio
import struct

import pytest

from coordinator.cluster import OFFSETS_TOPIC
from broker.apis import SERVED_APIS
from broker.server import KGroupServer
from protocol.api import APIS, ApiKey
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request
from protocol.hashing import coordinator_partition
from protocol.messages import (ApiVersionsRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
                               ListGroupsRequest, MetadataRequest)
from server_harness import TIMEOUT, connect, healthy, make_settings, start_server

E = ErrorCode


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_api_versions_each_version_lists_only_served_apis(server: KGroupServer, version: int) -> None:
    c = await connect(server)
    try:
        req = ApiVersionsRequest(client_software_name="kgroup-test", client_software_version="1.0")
        r = await c.call(req, version, timeout=TIMEOUT)
    finally:
        await c.close()
    assert r.error_code == 0
    got = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert got == {int(k): (APIS[k].min_version, APIS[k].max_version) for k in SERVED_APIS}
    # the data path is served (broker/datapath.py, issue 8), so it is advertised
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID):
        assert key in got
    assert [k.api_key for k in r.api_keys] == sorted(got)


def _raw_request(api_key: int, version: int, corr: int, body: bytes = b"", client_id: bytes = b"t",
                 flexible_header: bool = True) -> bytes:
    hdr = struct.pack(">hhi", api_key, version, corr) + struct.pack(">h", len(client_id)) + client_id
    if flexible_header:
        hdr += b"\x00"  # empty tagged fields (request header v2)
    payload = hdr + body
    return struct.pack(">i", len(payload)) + payload


async def test_api_versions_v5_gets_kip511_fallback_and_connection_stays_open(server: KGroupServer) -> None:
    reader, writer = await asyncio.open_connection(*server.address(1))
    try:
        # ApiVersions v5 (above our 0-4): body = compact strings "x", "1" + tagged fields
        writer.write(_raw_request(18, 5, 4242, b"\x02x\x021\x00"))
        await writer.drain()
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
        data = await asyncio.wait_for(reader.readexactly(size), TIMEOUT)
        corr, body = decode_response(18, 0, data)  # header v0, v0 body
        assert corr == 4242
        assert body.error_code == E.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
        # the client retries at a version both speak, on the same connection
        writer.write(encode_request(18, 3, 4243, "t", ApiVersionsRequest(client_software_name="x",
                                                                           client_software_version="1")))
        await writer.drain()
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
        corr, body = decode_response(18, 3, await asyncio.wait_for(reader.readexactly(size), TIMEOUT))
        assert corr == 4243 and body.error_code == 0 and len(body.api_keys) == len(SERVED_APIS)
    finally:
        writer.close()


async def test_wire_client_negotiates_versions(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        versions = await c.negotiate(version=3, timeout=TIMEOUT)
        assert versions[ApiKey.JOIN_GROUP] == (0, 9)
        assert c.version_for(ApiKey.HEARTBEAT) == 4
    finally:
        await c.close()


async def test_api_versions_invalid_software_name_gets_invalid_request(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        r = await c.call(ApiVersionsRequest(client_software_name="-bad name-", client_software_version="1"), 3,
                         timeout=TIMEOUT)
        assert r.error_code == E.INVALID_REQUEST and r.api_keys == []
        # KafkaApis answers and keeps the connection
        r = await c.call(ApiVersionsRequest(), 0, timeout=TIMEOUT)
        assert r.error_code == 0
    finally:
        await c.close()


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12, 13])
async def test_metadata_lists_all_brokers_and_topics(server: KGroupServer, version: int) -> None:
    c = await connect(server, 2)
    try:
        all_topics = MetadataRequest(topics=[] if version == 0 else None)
        r = await c.call(all_topics, version, timeout=TIMEOUT)
    finally:
        await c.close()
    assert [(b.node_id, b.host, b.port) for b in r.brokers] == [
        (b, "127.0.0.1", server.ports[b]) for b in range(3)]
    names = {t.name: t for t in r.topics}
    assert set(names) == {"orders", OFFSETS_TOPIC}
    orders = names["orders"]
    assert orders.error_code == 0 and len(orders.partitions) == 6
    for p in orders.partitions:
        ps = server.cluster.partition("orders", p.partition_index)
        assert (p.leader_id, p.replica_nodes, p.isr_nodes) == (ps.leader, ps.replicas, ps.isr)
    offsets = names[OFFSETS_TOPIC]
    assert len(offsets.partitions) == 50
    if version >= 1:
        assert r.controller_id in (0, 1, 2)
        assert offsets.is_internal and not orders.is_internal
    if version >= 2:
        assert r.cluster_id


async def test_metadata_unknown_topic_and_auto_create() -> None:
    srv = await start_server(make_settings())
    srv_auto = await start_server(make_settings(auto_create_topics=True))
    try:
        c = await connect(srv)
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name="nope")]), 12, timeout=TIMEOUT)
        assert [(t.name, t.error_code) for t in r.topics] == [("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name="bad/name")]), 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == E.INVALID_TOPIC_EXCEPTION
        await c.close()
        a = await connect(srv_auto)
        req = MetadataRequest(topics=[MetadataRequest.Topic(name="fresh")], allow_auto_topic_creation=True)
        r = await a.call(req, 12, timeout=TIMEOUT)
        # AutoTopicCreationManager: being created -> LEADER_NOT_AVAILABLE first, the topic on the next request
        assert r.topics[0].error_code == E.LEADER_NOT_AVAILABLE
        r = await a.call(req, 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == 0 and len(r.topics[0].partitions) == 1
        # allow_auto_topic_creation=false (v4+) is honoured
        r = await a.call(MetadataRequest(topics=[MetadataRequest.Topic(name="other")],
                                         allow_auto_topic_creation=False), 12, timeout=TIMEOUT)
        assert r.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        await a.close()
    finally:
        await srv.close()
        await srv_auto.close()


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_find_coordinator_returns_leader_of_the_groups_offsets_partition(server: KGroupServer,
                                                                              version: int) -> None:
    group = f"group-v{version}"
    partition = coordinator_partition(group, 50)
    leader = server.cluster.partition(OFFSETS_TOPIC, partition).leader
    for via in range(3):  # any broker answers FindCoordinator
        c = await connect(server, via)
        try:
            if version >= 4:
                r = await c.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group, "other"]), version,
                                 timeout=TIMEOUT)
                co = r.coordinators[0]
                assert (co.key, co.error_code, co.node_id, co.host, co.port) == (
                    group, 0, leader, "127.0.0.1", server.ports[leader])
                assert r.coordinators[1].key == "other"
            else:
                r = await c.call(FindCoordinatorRequest(key=group, key_type=0), version, timeout=TIMEOUT)
                assert (r.error_code, r.node_id, r.host, r.port) == (0, leader, "127.0.0.1", server.ports[leader])
        finally:
            await c.close()


async def test_find_coordinator_transaction_key_is_unavailable(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        r = await c.call(FindCoordinatorRequest(key="txn", key_type=1), 3, timeout=TIMEOUT)
        assert (r.error_code, r.node_id) == (E.COORDINATOR_NOT_AVAILABLE, -1)
        r = await c.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]), 4, timeout=TIMEOUT)
        assert [(x.key, x.error_code) for x in r.coordinators] == [("a", E.COORDINATOR_NOT_AVAILABLE),
                                                                   ("b", E.COORDINATOR_NOT_AVAILABLE)]
    finally:
        await c.close()


async def test_group_requests_to_other_brokers_get_not_coordinator(server: KGroupServer) -> None:
    group = "elsewhere"
    coord = server.svc.coordinator_of(group)
    for b in range(3):
        if b == coord:
            continue
        c = await connect(server, b)
        try:
            r = await c.call(HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4, timeout=TIMEOUT)
            assert r.error_code == E.NOT_COORDINATOR
            r = await c.call(JoinGroupRequest(group_id=group, session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                              member_id="", protocol_type="consumer",
                                              protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")]),
                             9, timeout=TIMEOUT)
            assert r.error_code == E.NOT_COORDINATOR
        finally:
            await c.close()


async def test_many_connections_at_once(server: KGroupServer) -> None:
    clients = await asyncio.gather(*(connect(server, i % 3) for i in range(60)))
    try:
        rs = await asyncio.gather(*(c.call(ListGroupsRequest(), 4, timeout=TIMEOUT) for c in clients))
        assert all(r.error_code == 0 for r in rs)
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    await healthy(server)


async def test_metadata_after_a_broker_stops(server: KGroupServer) -> None:
    """KRaftMetadataCache: only live brokers are listed; dead replicas are offline (v5+); v0 filters them out of
    the replica/ISR lists and flags the partition REPLICA_NOT_AVAILABLE; leaderships moved to live replicas."""
    await server.stop_broker(1)
    c = await connect(server, 0)
    try:
        r = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name=OFFSETS_TOPIC)]), 12, timeout=TIMEOUT)
        assert [b.node_id for b in r.brokers] == [0, 2]
        parts = r.topics[0].partitions
        assert all(p.leader_id in (0, 2) and p.error_code == 0 for p in parts)
        assert all(p.offline_replicas == [1] for p in parts)  # replication factor 3 over 3 brokers
        moved = [p for p in parts if p.replica_nodes[0] == 1]
        assert moved and all(p.leader_epoch >= 1 for p in moved)
        r0 = await c.call(MetadataRequest(topics=[MetadataRequest.Topic(name=OFFSETS_TOPIC)]), 0, timeout=TIMEOUT)
        p0 = r0.topics[0].partitions[0]
        assert p0.error_code == E.REPLICA_NOT_AVAILABLE and 1 not in p0.replica_nodes and 1 not in p0.isr_nodes
    finally:
        await c.close()
    await server.start_broker(1)
    await healthy(server, 1)
